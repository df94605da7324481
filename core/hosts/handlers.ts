import { notFound } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import type { hostOperations } from './operations.ts';
import { setOption, splitOptionName } from './options.ts';

export async function setHostOption({ ctx, input }: Args<'hostOption'>) {
  splitOptionName(input.name);
  return ctx.ports.repos.transaction(async (repos) => {
    const host = await repos.hosts.find(input.hostid);
    if (!host) throw notFound(`Host ${input.hostid} not found`);
    await repos.hosts.setData(input.hostid, setOption(host.data, input.name, input.value));
    return {};
  });
}

export const hostHandlers = { hostOption: setHostOption } satisfies Handlers<typeof hostOperations>;
