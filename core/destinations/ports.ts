import type { SerializedAnswer } from '../common/operation.ts';
import type { Destination, DestinationFilter, DestinationInput, DestinationType } from './model.ts';

/** Answers serialized ahead, each with the version of the data it shows. */
export interface ViewCache {
  get(key: string): { version: number; answer: SerializedAnswer } | undefined;
  set(key: string, entry: { version: number; answer: SerializedAnswer }): void;
}

export interface CountryRepo {
  exists(iso: string): Promise<boolean>;
}

export interface DestinationRepo {
  exists(name: string): Promise<boolean>;
  get(name: string): Promise<Destination | null>;
  /** Ordered by name. */
  list(filter: DestinationFilter): Promise<Destination[]>;
  /**
   * The same destinations as a JSON array of destinationView records, rendered by the database,
   * and the version of the list it shows; when `knownVersion` is still current nothing is
   * rendered (view is null).
   */
  listView(filter: DestinationFilter, knownVersion: number | null): Promise<{ version: number; view: string | null }>;
  names(): Promise<string[]>;
  types(): Promise<DestinationType[]>;
  typeExists(id: number): Promise<boolean>;
  /** Countries with at least one destination, ordered by iso. */
  countriesInUse(): Promise<Array<{ iso: string; name: string }>>;
  /** Stores the status an operator set (WAIT when started, HOLD, STOP); says whether the destination exists. */
  setStatus(name: string, statusCode: string): Promise<boolean>;
  /** Replaces its options text (`data`); says whether the destination exists. */
  setData(name: string, data: string): Promise<boolean>;
  /** Inserts unless the name exists; says whether it inserted. */
  insert(destination: DestinationInput): Promise<boolean>;
  aliasesFrom(names: string[]): Promise<Array<{ aliasFrom: string; aliasTo: string }>>;
  addAlias(aliasFrom: string, aliasTo: string): Promise<void>;
}
