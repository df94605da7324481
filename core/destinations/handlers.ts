import { utf8 } from '../common/encoding.ts';
import { notFound } from '../common/errors.ts';
import { type Args, type Handlers, SerializedAnswer } from '../common/operation.ts';
import type { Ctx } from '../ports.ts';
import { requireCountry } from './lookups.ts';
import { type DestinationFilter, destinationView } from './model.ts';
import type { destinationOperations } from './operations.ts';
import { setDestinationOption } from './options.ts';

/** Checks each filter names something that exists, as the reference server does. */
export async function checkedFilter(
  ctx: Ctx,
  input: { iso?: string; id?: string; type?: number },
): Promise<DestinationFilter> {
  if (input.iso !== undefined) await requireCountry(ctx, input.iso);
  if (input.id !== undefined && !(await ctx.ports.repos.incomingUsers.find(input.id)))
    throw notFound(`User ${input.id} not found`);
  if (input.type !== undefined && !(await ctx.ports.repos.destinations.typeExists(input.type)))
    throw notFound(`Type ${input.type} not found`);
  return { iso: input.iso, userId: input.id, type: input.type };
}

/**
 * The list is rendered by the database from an entry each destination keeps, and kept here as a
 * whole answer with the version it shows: asking again for an unchanged list costs one small query
 * and no rendering (BENCHMARKS.md, destination/list).
 */
export async function list({ ctx, input }: Args<'destinationList'>) {
  const filter = await checkedFilter(ctx, input);
  const key = `destinationList:${JSON.stringify(filter)}`;
  const known = ctx.ports.views.get(key);
  const { version, view } = await ctx.ports.repos.destinations.listView(filter, known?.version ?? null);
  if (view === null) return known!.answer;
  const answer = new SerializedAnswer(utf8(`{"status":"ok","destinationList":${view}}`));
  ctx.ports.views.set(key, { version, answer });
  return answer;
}

export async function get({ ctx, input }: Args<'destinationGet'>) {
  const destination = await ctx.ports.repos.destinations.get(input.name);
  if (!destination) throw notFound(`Destination ${input.name} not found`);
  return { destination: destinationView(destination) };
}

export async function types({ ctx }: Args<'destinationTypeList'>) {
  const typeList = await ctx.ports.memo.get('destinationTypeList', async () => {
    const all = await ctx.ports.repos.destinations.types();
    return all.map((t) => ({ [String(t.id)]: t.label }));
  });
  return { typeList };
}

export async function countries({ ctx }: Args<'destinationCountryList'>) {
  return { countryList: await ctx.ports.repos.destinations.countriesInUse() };
}

/** Sets one of the destination's options; the audit trail names the API client. */
export async function setOption({ ctx, input }: Args<'destinationOption'>) {
  const actor = `api:${ctx.caller?.username ?? 'unknown'}`;
  await setDestinationOption(ctx.ports, actor, input.destination, input.name, input.value);
  return {};
}

export const destinationHandlers = {
  destinationList: list,
  destinationGet: get,
  destinationTypeList: types,
  destinationCountryList: countries,
  destinationOption: setOption,
} satisfies Handlers<typeof destinationOperations>;
