import { notFound } from '../common/errors.ts';
import type { Ctx } from '../ports.ts';

export async function requireCountry(ctx: Ctx, iso: string) {
  if (!(await ctx.ports.repos.countries.exists(iso))) throw notFound(`Country ${iso} not found`);
}

export async function requireDestination(ctx: Ctx, name: string) {
  if (!(await ctx.ports.repos.destinations.exists(name))) throw notFound(`Destination ${name} not found`);
}
