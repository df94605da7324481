import type { FieldDefinition, MetadataField, StoredValue } from './model.ts';

export type NotePublisher = (destination: string, html: string) => Promise<void>;

export interface MetadataRepo {
  /** Every definition, ordered by category, position, name. */
  fields(): Promise<MetadataField[]>;
  upsertField(definition: FieldDefinition): Promise<{ id: number; created: boolean }>;
  values(destination: string): Promise<StoredValue[]>;
  flags(destination: string): Promise<number[]>;
  /** Removes every value of the destination except those of `keepFieldIds`, then inserts `values`. */
  replaceValues(destination: string, values: StoredValue[], keepFieldIds: number[]): Promise<void>;
  replaceFlags(destination: string, fieldIds: number[]): Promise<void>;
  /** Stores `value` as the first value of the field where the destination has none yet. */
  seedDefault(fieldId: number, value: string, destinations?: string[]): Promise<void>;
}
