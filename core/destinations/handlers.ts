import { notFound } from '../common/errors.ts';
import type { Args } from '../common/handler.ts';
import { JsonText } from './json-text.ts';
import { destinationView, type DestinationFilter } from './model.ts';
import type { Ctx } from '../ports.ts';
import { requireCountry } from './lookups.ts';

/** Checks each filter names something that exists, as the reference server does. */
export async function checkedFilter(ctx: Ctx, input: { iso?: string; id?: string; type?: number }): Promise<DestinationFilter> {
  if (input.iso !== undefined) await requireCountry(ctx, input.iso);
  if (input.id !== undefined && !(await ctx.repos.incomingUsers.find(input.id))) throw notFound(`User ${input.id} not found`);
  if (input.type !== undefined && !(await ctx.repos.destinations.typeExists(input.type))) throw notFound(`Type ${input.type} not found`);
  return { iso: input.iso, userId: input.id, type: input.type };
}

export async function list({ ctx, input }: Args<'destinationList'>) {
  const filter = await checkedFilter(ctx, input);
  // One round trip either way: the database renders the list only when it changed since.
  const key = `destinationList:${JSON.stringify(filter)}`;
  const known = ctx.views.get(key);
  const { version, view } = await ctx.repos.destinations.listView(filter, known?.version ?? null);
  if (view) ctx.views.set(key, { version, view });
  return { destinationList: view ?? known!.view };
}

export async function get({ ctx, input }: Args<'destinationGet'>) {
  const destination = await ctx.repos.destinations.get(input.name);
  if (!destination) throw notFound(`Destination ${input.name} not found`);
  return { destination: destinationView(destination) };
}

export async function types({ ctx }: Args<'destinationTypeList'>) {
  // Serialized once: objects keyed by digits are slow to build and to serialize on every call.
  const typeList = await ctx.memo.get('destinationTypeList', async () => {
    const all = await ctx.repos.destinations.types();
    return new JsonText(JSON.stringify(all.map((t) => ({ [String(t.id)]: t.label }))));
  });
  return { typeList };
}

export async function countries({ ctx }: Args<'destinationCountryList'>) {
  return { countryList: await ctx.repos.destinations.countriesInUse() };
}
