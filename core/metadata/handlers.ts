import { invalid } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import { requireDestination } from '../destinations/lookups.ts';
import type { Ctx } from '../ports.ts';
import { currentValues } from './current-values.ts';
import { isMultiValue, type MetadataField, type StoredValue } from './model.ts';
import { scheduleNotePush } from './notes.ts';
import type { metadataOperations } from './operations.ts';
import { normalizeValue } from './values.ts';

const BODY_SHAPE = "Request body must contain a 'metadata' object grouped by category";
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const canSeeSensitive = (ctx: Ctx) => ctx.caller?.showSensitiveInfo === true;

/** Fields a caller may see: active ones, without password fields unless sensitive info is granted. */
export async function visibleFields(ctx: Ctx, reveal = canSeeSensitive(ctx)) {
  return (await ctx.ports.repos.metadata.fields()).filter((f) => f.active && (reveal || f.type !== 'password'));
}

export async function fields({ ctx }: Args<'metadataFields'>) {
  const reveal = canSeeSensitive(ctx);
  const active = (await ctx.ports.repos.metadata.fields()).filter((f) => f.active);
  return {
    fields: await Promise.all(
      active.map(async (f) => ({
        id: f.id,
        name: f.name,
        label: f.label,
        type: f.type,
        category: f.category,
        tooltip: f.tooltip,
        defaultValue:
          f.type === 'password'
            ? reveal && f.defaultValue !== null
              ? await ctx.ports.secrets.decrypt(f.defaultValue)
              : null
            : f.defaultValue,
        editable: f.editable,
        maxOccurs: isMultiValue(f) ? -1 : 1,
        position: f.position,
        active: f.active,
      })),
    ),
  };
}

export async function get({ ctx, input }: Args<'metadataGet'>) {
  await requireDestination(ctx, input.name);
  const shown = await visibleFields(ctx);
  const { metadata, includeInNotes } = await currentValues(ctx.ports, input.name, shown);
  return { destination: input.name, exportedAt: ctx.ports.clock().toISOString(), metadata, includeInNotes };
}

function fieldLookup(all: MetadataField[]) {
  const byName = new Map(all.filter((f) => f.active).map((f) => [f.name.toLowerCase(), f]));
  return (name: string) => {
    const field = byName.get(name.toLowerCase());
    if (!field) throw invalid(`Unknown metadata field: ${name}`);
    return field;
  };
}

function* entries(grouped: Record<string, unknown>, what: string) {
  for (const [category, group] of Object.entries(grouped)) {
    if (!isPlainObject(group)) throw invalid(`${what}: category ${category} must be an object of field names`);
    yield* Object.entries(group);
  }
}

export async function put({ ctx, input }: Args<'metadataPut'>) {
  const body = input.body;
  if (!isPlainObject(body) || !isPlainObject(body.metadata)) throw invalid(BODY_SHAPE);
  const destination = input.name;
  await requireDestination(ctx, destination);
  const reveal = canSeeSensitive(ctx);
  const all = await ctx.ports.repos.metadata.fields();
  const lookup = fieldLookup(all);

  const values: StoredValue[] = [];
  const given = new Set<number>();
  for (const [name, raw] of entries(body.metadata, 'metadata')) {
    const field = lookup(name);
    if (given.has(field.id)) throw invalid(`Metadata field ${name} is given more than once`);
    given.add(field.id);
    if (raw === null || raw === undefined) continue;
    // Spec §4.5 PUT rule 3: a locked field's value is ignored without error, whatever its shape.
    if (!field.editable) {
      ctx.ports.logger.info('value of a locked metadata field ignored', {
        requestId: ctx.requestId,
        destination,
        field: field.name,
      });
      continue;
    }
    const texts = normalizeValue(field, raw);
    // Without showSensitiveInfo the caller never saw password values: they are kept as stored.
    if (field.type === 'password' && !reveal) continue;
    for (const [position, text] of texts.entries()) {
      values.push({
        fieldId: field.id,
        position,
        value: field.type === 'password' ? await ctx.ports.secrets.encrypt(text) : text,
      });
    }
  }

  const flags = new Set<number>();
  if (body.includeInNotes !== undefined && body.includeInNotes !== null) {
    if (!isPlainObject(body.includeInNotes)) throw invalid('includeInNotes must be an object grouped by category');
    for (const [name, flag] of entries(body.includeInNotes, 'includeInNotes')) {
      const field = lookup(name);
      if (flag !== null && typeof flag !== 'boolean') throw invalid(`includeInNotes of ${name} must be true or false`);
      if (flag) flags.add(field.id);
    }
  }
  const hiddenPasswordIds = reveal ? [] : all.filter((f) => f.type === 'password').map((f) => f.id);

  await ctx.ports.repos.transaction(async (repos) => {
    // Flags of password fields the caller could not see are kept, read in the same transaction.
    if (hiddenPasswordIds.length) {
      const kept = new Set(hiddenPasswordIds);
      for (const id of await repos.metadata.flags(destination)) if (kept.has(id)) flags.add(id);
    }
    await repos.metadata.replaceValues(destination, values, hiddenPasswordIds);
    await repos.metadata.replaceFlags(destination, [...flags]);
  });
  scheduleNotePush(ctx, destination);
  return { destination, count: values.length };
}

export const metadataHandlers = {
  metadataFields: fields,
  metadataGet: get,
  metadataPut: put,
} satisfies Handlers<typeof metadataOperations>;
