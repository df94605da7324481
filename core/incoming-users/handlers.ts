import type { InputOf } from '../catalogue.ts';
import { constantTimeEqualText } from '../common/crypto.ts';
import { notFound } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import { requireCountry, requireDestination } from '../destinations/lookups.ts';
import type { Ctx } from '../ports.ts';
import { PRODUCT } from '../system/version.ts';
import type { incomingUserOperations } from './operations.ts';
import type { IncomingUser } from './ports.ts';

/** Shared by add and add2: creation defaults differ, updates leave omitted values unchanged. */
async function upsert(ctx: Ctx, input: InputOf<'incomingUserAdd2'>, activeByDefault: boolean, password?: string) {
  await requireCountry(ctx, input.iso);
  const now = ctx.ports.clock();
  const existing = await ctx.ports.repos.incomingUsers.find(input.id);
  // Sealed again only when it changes: a new sealed password ends the user's portal sessions.
  const unchanged = password !== undefined && (await samePassword(ctx, existing?.passwordSealed ?? null, password));
  const passwordSealed = password === undefined || unchanged ? undefined : await ctx.ports.secrets.encrypt(password);
  if (!existing) {
    const user: IncomingUser = {
      id: input.id,
      email: input.email,
      iso: input.iso,
      portalService: input.portalService ?? 'standard-login',
      active: input.active ?? activeByDefault,
      passwordSealed: passwordSealed ?? null,
      lastLoginDate: null,
    };
    // Inserts nothing when a concurrent call created the id first; the update below then
    // applies this call as the update it now is (and repeats the same values otherwise).
    await ctx.ports.repos.incomingUsers.insert(user, now);
  }
  await ctx.ports.repos.incomingUsers.update(
    input.id,
    {
      email: input.email,
      iso: input.iso,
      ...(input.portalService !== undefined && { portalService: input.portalService }),
      ...(input.active !== undefined && { active: input.active }),
      ...(passwordSealed !== undefined && { passwordSealed }),
    },
    now,
  );
  ctx.ports.portalLogins.forget(input.id);
  return {};
}

async function samePassword(ctx: Ctx, sealed: string | null, password: string) {
  if (sealed === null) return false;
  const stored = await ctx.ports.secrets.decrypt(sealed).catch(() => null);
  return stored !== null && constantTimeEqualText(stored, password);
}

export const add = ({ ctx, input }: Args<'incomingUserAdd'>) => upsert(ctx, input, false, input.pass);

export const add2 = ({ ctx, input }: Args<'incomingUserAdd2'>) => upsert(ctx, input, true);

export async function list({ ctx, input }: Args<'incomingUserList'>) {
  if (input.destination !== undefined) await requireDestination(ctx, input.destination);
  const users = await ctx.ports.repos.incomingUsers.list({ destination: input.destination });
  const reveal = ctx.caller?.showSensitiveInfo === true;
  const userList = await Promise.all(
    users.map(async (u) => ({
      id: u.id,
      email: u.email,
      iso: u.iso,
      portalService: u.portalService,
      active: u.active,
      associations: u.associations,
      lastLoginDate: u.lastLoginDate?.getTime() ?? null,
      ...(reveal && { password: u.passwordSealed === null ? null : await ctx.ports.secrets.decrypt(u.passwordSealed) }),
    })),
  );
  return { userList };
}

async function requireUser(ctx: Ctx, id: string) {
  const user = await ctx.ports.repos.incomingUsers.find(id);
  if (!user) throw notFound(`User ${id} not found`);
  return user;
}

export async function del({ ctx, input }: Args<'incomingUserDel'>) {
  await requireUser(ctx, input.id);
  await ctx.ports.repos.incomingUsers.update(input.id, { active: false }, ctx.ports.clock());
  ctx.ports.portalLogins.forget(input.id);
  return {};
}

/** Legacy activation: a category name containing the product name activates, none deactivates. */
export const hasActivationMarker = (categories: readonly string[]) =>
  categories.some((c) => c.toUpperCase().includes(PRODUCT));

export async function addCategories({ ctx, input }: Args<'incomingCategoryAdd'>) {
  await requireUser(ctx, input.id);
  await ctx.ports.repos.incomingUsers.update(input.id, { active: hasActivationMarker(input.body) }, ctx.ports.clock());
  ctx.ports.portalLogins.forget(input.id);
  return {};
}

export async function addAssociation({ ctx, input }: Args<'incomingAssociationAdd'>) {
  const user = await ctx.ports.repos.incomingUsers.find(input.id);
  if (!user?.active) throw notFound(`User ${input.id} not found/active`);
  await requireDestination(ctx, input.destination);
  await ctx.ports.repos.incomingUsers.addAssociation(input.id, input.destination);
  ctx.ports.portalLogins.forget(input.id);
  return {};
}

export async function removeAssociation({ ctx, input }: Args<'incomingAssociationDel'>) {
  await requireUser(ctx, input.id);
  await requireDestination(ctx, input.destination);
  if (!(await ctx.ports.repos.incomingUsers.removeAssociation(input.id, input.destination))) {
    throw notFound(`Association of user ${input.id} with destination ${input.destination} not found`);
  }
  ctx.ports.portalLogins.forget(input.id);
  return {};
}

export async function listAssociations({ ctx, input }: Args<'incomingAssociationList'>) {
  await requireUser(ctx, input.id);
  return { associationList: await ctx.ports.repos.incomingUsers.associations(input.id) };
}

export const incomingUserHandlers = {
  incomingUserAdd: add,
  incomingUserAdd2: add2,
  incomingUserList: list,
  incomingUserDel: del,
  incomingCategoryAdd: addCategories,
  incomingAssociationAdd: addAssociation,
  incomingAssociationDel: removeAssociation,
  incomingAssociationList: listAssociations,
} satisfies Handlers<typeof incomingUserOperations>;
