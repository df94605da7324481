import { z } from 'zod';
import { invalid } from '../common/errors.ts';
import { recordIn } from '../console/audit.ts';
import type { Ports } from '../ports.ts';
import { FIELD_TYPES, type FieldDefinition, type MetadataField } from './model.ts';
import { scheduleNotePush } from './notes.ts';
import { normalizeValue } from './values.ts';

/** A field definition as imported and exported (the console uses the same checks). */
const definitionSchema = z.object({
  name: z
    .string()
    .regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, "name: 1 to 64 letters, digits, '_', '.' or '-', starting with a letter"),
  label: z.string().trim().min(1, 'label must not be empty'),
  type: z.enum(FIELD_TYPES, { error: `type must be one of ${FIELD_TYPES.join(', ')}` }),
  category: z.string().trim().min(1, 'category must not be empty'),
  tooltip: z.string().nullable().default(null),
  defaultValue: z.string().nullable().default(null),
  editable: z.boolean().default(true),
  maxOccurs: z
    .number()
    .int()
    .refine((n) => n === -1 || n >= 1, 'maxOccurs must be 1 (single value), -1 (any number) or a maximum above 1')
    .default(1),
  position: z.number().int().default(0),
  active: z.boolean().default(true),
});

export type FieldDefinitionInput = z.input<typeof definitionSchema>;

export function checkDefinition(raw: unknown, where: string): FieldDefinition {
  const parsed = definitionSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.path.join('.');
    // Most messages already start with the key ("type must be one of ..."): name it once.
    const named = key === '' || issue.message.startsWith(`${key}:`) || issue.message.startsWith(`${key} `);
    throw invalid(`${where}: ${named ? '' : `${key}: `}${issue.message}`);
  }
  const definition = parsed.data;
  if (definition.defaultValue !== null) {
    const probe = { ...definition, id: 0, maxOccurs: 1 } as MetadataField;
    const value = /^(contact|mail-group|switchboard)$/.test(definition.type)
      ? parseJson(definition.defaultValue, where)
      : definition.defaultValue;
    const [text] = normalizeValue(probe, value);
    definition.defaultValue = text ?? null;
  }
  return definition;
}

function parseJson(text: string, where: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid(`${where}: defaultValue of a structured field must be a JSON object`);
  }
}

/**
 * Upserts definitions by name (case-insensitive), all or nothing. A new field with a default
 * seeds that default into every destination; a locked field's new default reaches the notes.
 */
export async function importFields(ports: Ports, actor: string, raw: unknown) {
  if (!Array.isArray(raw)) throw invalid('a JSON array of field definitions expected');
  const definitions = raw.map((d, i) =>
    checkDefinition(d, `field ${i + 1}${typeof d === 'object' && d && 'name' in d ? ` (${String(d.name)})` : ''}`),
  );
  const names = new Set<string>();
  for (const d of definitions) {
    if (names.has(d.name.toLowerCase())) throw invalid(`field ${d.name} is defined twice`);
    names.add(d.name.toLowerCase());
  }
  const before = new Map((await ports.repos.metadata.fields()).map((f) => [f.name.toLowerCase(), f]));
  const result = await ports.repos.transaction(async (repos) => {
    let created = 0;
    for (const definition of definitions) {
      const stored =
        definition.type === 'password' && definition.defaultValue !== null
          ? { ...definition, defaultValue: await ports.secrets.encrypt(definition.defaultValue) }
          : definition;
      const { id, created: isNew } = await repos.metadata.upsertField(stored);
      const change = {
        actor,
        action: isNew ? 'create' : 'update',
        targetKind: 'metadata field',
        target: definition.name,
      };
      await recordIn(repos, ports.clock(), change);
      if (isNew) {
        created++;
        if (stored.active && stored.editable && stored.defaultValue !== null)
          await repos.metadata.seedDefault(id, stored.defaultValue);
      }
    }
    return { created, updated: definitions.length - created };
  });
  const lockedDefaultChanged = definitions.some((d) => {
    const old = before.get(d.name.toLowerCase());
    return old && !d.editable && old.defaultValue !== d.defaultValue;
  });
  if (lockedDefaultChanged && ports.notes) {
    const ctx = { ports, requestId: 'fields-import', caller: null };
    for (const name of await ports.repos.destinations.names()) scheduleNotePush(ctx, name);
  }
  return result;
}

/** Every definition in the import format; password defaults stay out of the file. */
export async function exportFields(ports: Ports) {
  return (await ports.repos.metadata.fields()).map(({ id: _id, ...f }) => ({
    ...f,
    defaultValue: f.type === 'password' ? null : f.defaultValue,
  }));
}
