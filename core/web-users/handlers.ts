import { generatePassword, hashPassword } from '../common/crypto.ts';
import { conflict, missingParameter, notFound } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import type { Ctx } from '../ports.ts';
import type { webUserOperations } from './operations.ts';

async function passwordFields(ctx: Ctx, password: string) {
  return {
    passwordSealed: await ctx.ports.secrets.encrypt(password),
    passwordHash: await hashPassword(ctx.ports.hashing, password),
  };
}

export async function add({ ctx, input }: Args<'webUserAdd'>) {
  const now = ctx.ports.clock();
  const existing = await ctx.ports.repos.webUsers.find(input.id);
  if (!existing) {
    if (input.pass === undefined) throw missingParameter('pass');
    const inserted = await ctx.ports.repos.webUsers.insert(
      {
        id: input.id,
        name: input.name ?? null,
        active: input.active ?? false,
        ...(await passwordFields(ctx, input.pass)),
      },
      now,
    );
    // Lost a race with a concurrent create: apply this call as the update it now is.
    if (inserted) return {};
  }
  await ctx.ports.repos.webUsers.update(
    input.id,
    {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.active !== undefined && { active: input.active }),
      ...(input.pass !== undefined && (await passwordFields(ctx, input.pass))),
    },
    now,
  );
  return {};
}

export async function add2({ ctx, input }: Args<'webUserAdd2'>) {
  const pass = generatePassword();
  const inserted = await ctx.ports.repos.webUsers.insert(
    { id: input.id, name: input.name ?? null, active: input.active ?? false, ...(await passwordFields(ctx, pass)) },
    ctx.ports.clock(),
  );
  if (!inserted) throw conflict(`Web user ${input.id} already exists`);
  return { pass };
}

export async function list({ ctx, input }: Args<'webUserList'>) {
  const users = await ctx.ports.repos.webUsers.listActive({ category: input.category });
  const reveal = ctx.caller?.showSensitiveInfo === true;
  const userList = await Promise.all(
    users.map(async (u) => ({
      id: u.id,
      name: u.name,
      active: u.active,
      categories: u.categories,
      ...(reveal && { password: await ctx.ports.secrets.decrypt(u.passwordSealed) }),
    })),
  );
  return { userList };
}

export async function del({ ctx, input }: Args<'webUserDel'>) {
  if (!(await ctx.ports.repos.webUsers.delete(input.id))) throw notFound(`User ${input.id} not found`);
  return {};
}

export const webUserHandlers = {
  webUserAdd: add,
  webUserAdd2: add2,
  webUserList: list,
  webUserDel: del,
} satisfies Handlers<typeof webUserOperations>;
