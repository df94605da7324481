import type { Repositories } from '../ports.ts';

/** A new destination takes the default of every editable field that has one (locked fields never store). */
export async function seedDefaultsFor(repos: Repositories, destinations: string[]) {
  for (const field of await repos.metadata.fields()) {
    if (field.active && field.editable && field.defaultValue !== null) {
      await repos.metadata.seedDefault(field.id, field.defaultValue, destinations);
    }
  }
}
