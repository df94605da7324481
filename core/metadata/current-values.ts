import type { Ports } from '../ports.ts';
import type { MetadataField } from './model.ts';
import { fieldDefaultStored, presentValue } from './values.ts';

/** The destination's values in API form, grouped by category; locked fields show their default. */
export async function currentValues(ports: Ports, destination: string, shown: MetadataField[]) {
  const [stored, flags] = await Promise.all([
    ports.repos.metadata.values(destination),
    ports.repos.metadata.flags(destination),
  ]);
  const byField = new Map<number, string[]>();
  for (const v of stored) byField.set(v.fieldId, [...(byField.get(v.fieldId) ?? []), v.value]);
  const flagged = new Set(flags);
  const metadata: Record<string, Record<string, unknown>> = {};
  const includeInNotes: Record<string, Record<string, boolean>> = {};
  for (const f of shown) {
    const texts = f.editable ? (byField.get(f.id) ?? []) : fieldDefaultStored(f);
    (metadata[f.category] ??= {})[f.name] = await presentValue(f, texts, ports.secrets);
    (includeInNotes[f.category] ??= {})[f.name] = flagged.has(f.id);
  }
  return { metadata, includeInNotes };
}
