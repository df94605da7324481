import { notFound } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import type { hostOperations } from './operations.ts';
import { splitOptionName } from './options.ts';
import { setOptionSealed } from './secret-options.ts';

export async function setHostOption({ ctx, input }: Args<'hostOption'>) {
  splitOptionName(input.name);
  return ctx.ports.repos.transaction(async (repos) => {
    const host = await repos.hosts.find(input.hostid);
    if (!host) throw notFound(`Host ${input.hostid} not found`);
    const data = await setOptionSealed(host.data, input.name, input.value, ctx.ports.secrets);
    await repos.hosts.setData(input.hostid, data);
    return {};
  });
}

export const hostHandlers = { hostOption: setHostOption } satisfies Handlers<typeof hostOperations>;
