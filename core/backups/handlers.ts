import { badRequest, invalid, notFound } from '../common/errors.ts';
import type { Args, Handlers } from '../common/operation.ts';
import { checkedFilter } from '../destinations/handlers.ts';
import { DESTINATION_KEYS, type Destination, HOST_KEYS, type Host } from '../destinations/model.ts';
import { checkOptionsOf } from '../destinations/options.ts';
import { revealSecretOptions, sealGivenOptions, withoutSecretOptions } from '../hosts/secret-options.ts';
import { seedDefaultsFor } from '../metadata/seeding.ts';
import type { Ctx, Repositories } from '../ports.ts';
import { checkWis2Options } from '../wis2/options.ts';
import type { backupOperations } from './operations.ts';
import { type Backup, parseBackupBody } from './schema.ts';

const pick = <T extends object>(record: T, keys: object) =>
  Object.fromEntries(Object.keys(keys).map((k) => [k, (record as Record<string, unknown>)[k] ?? null]));

/** The backup structure of wire-decisions §7 for these destinations. */
async function backupOf(ctx: Ctx, destinations: Destination[]) {
  const names = destinations.map((d) => d.name);
  const reveal = ctx.caller?.showSensitiveInfo === true;
  const associations = await ctx.ports.repos.hosts.ofDestinations(names);
  const hostView = async (h: Host) => {
    const { passwd: _omit, ...rest } = pick(h, HOST_KEYS);
    if (!reveal) return { ...rest, data: withoutSecretOptions(h.data) };
    return {
      ...rest,
      data: await revealSecretOptions(h.data, ctx.ports.secrets),
      passwd: h.passwdSealed === null ? null : await ctx.ports.secrets.decrypt(h.passwdSealed),
    };
  };
  const byDestination = new Map<string, Array<{ priority: number; host: unknown }>>();
  for (const a of associations) {
    const list = byDestination.get(a.destination) ?? [];
    list.push({ priority: a.priority, host: await hostView(a.host) });
    byDestination.set(a.destination, list);
  }
  const ecuserNames = new Set<string>();
  const methodNames = new Set<string>();
  for (const d of destinations) if (d.ecuserName) ecuserNames.add(d.ecuserName);
  for (const a of associations) {
    if (a.host.ecuserName) ecuserNames.add(a.host.ecuserName);
    if (a.host.transferMethodName) methodNames.add(a.host.transferMethodName);
  }
  return {
    destinations: destinations.map((d) => ({
      destination: pick(d, DESTINATION_KEYS),
      associations: byDestination.get(d.name) ?? [],
    })),
    aliases: await ctx.ports.repos.destinations.aliasesFrom(names),
    methods: await ctx.ports.repos.references.methods([...methodNames]),
    ecusers: await ctx.ports.repos.references.ecusers([...ecuserNames]),
  };
}

export async function list({ ctx, input }: Args<'backupList'>) {
  const destinations = await ctx.ports.repos.destinations.list(await checkedFilter(ctx, input));
  return { backup: await backupOf(ctx, destinations) };
}

export async function get({ ctx, input }: Args<'backupGet'>) {
  const destination = await ctx.ports.repos.destinations.get(input.name);
  if (!destination) throw notFound(`Destination ${input.name} not found`);
  return { backup: await backupOf(ctx, [destination]) };
}

export async function put({ ctx, input }: Args<'backupPut'>) {
  if (input.body === undefined) throw badRequest('Invalid request body: {"backup": {...}} expected');
  const parsed = parseBackupBody(input.body);
  if (!parsed.ok) throw badRequest(`Invalid request body: ${parsed.problem}`);
  const created = await ctx.ports.repos.transaction((repos) =>
    restore(ctx, repos, parsed.backup, input.copySharedHost ?? false),
  );
  return { message: `Number of Destination(s) created: ${created}` };
}

/** Creates what does not exist yet; runs inside one transaction, so a failure applies nothing. */
export async function restore(ctx: Ctx, repos: Repositories, backup: Backup, copySharedHost: boolean): Promise<number> {
  const ensureOwner = async (name: string | null | undefined) => {
    if (name)
      await repos.references.ensureEcuser({ name, uid: null, gid: null, dir: null, shell: null, comment: null });
  };
  // Refused before anything is written: a destination's options are checked where they are stored.
  for (const { destination: d } of backup.destinations) {
    const refusal = checkWis2Options(d.data ?? '');
    if (refusal !== null) throw invalid(`Destination ${d.name}: ${refusal}`);
  }
  for (const e of backup.ecusers) {
    await repos.references.ensureEcuser({
      name: e.name,
      uid: e.uid ?? null,
      gid: e.gid ?? null,
      dir: e.dir ?? null,
      shell: e.shell ?? null,
      comment: e.comment ?? null,
    });
  }
  for (const m of backup.methods) {
    if (m.ectransModule) {
      const mod = m.ectransModule;
      await repos.references.ensureModule({
        name: mod.name,
        classe: mod.classe ?? null,
        archive: mod.archive ?? null,
        active: mod.active ?? true,
      });
    }
    const moduleName = m.ectransModuleName ?? m.ectransModule?.name ?? null;
    if (moduleName)
      await repos.references.ensureModule({ name: moduleName, classe: null, archive: null, active: true });
    await repos.references.ensureMethod({
      name: m.name,
      ectransModuleName: moduleName,
      value: m.value ?? null,
      restrict: m.restrict ?? false,
      resolve: m.resolve ?? false,
      comment: m.comment ?? null,
      active: m.active ?? true,
    });
  }

  // A host shared by several destinations of this backup stays shared among their copies.
  const restoredHosts = new Map<number, number>();
  const createdNames = new Set<string>();
  let created = 0;
  for (const { destination: d, associations } of backup.destinations) {
    if (await repos.destinations.exists(d.name)) continue;
    if (!(await repos.countries.exists(d.countryIso))) throw notFound(`Country ${d.countryIso} not found`);
    if (!(await repos.destinations.typeExists(d.type))) throw notFound(`Type ${d.type} not found`);
    // A core data topic needs an open-access way, which a destination just created can't have yet.
    await checkOptionsOf(repos, d.name, d.data ?? '', true);
    await ensureOwner(d.ecuserName);
    await repos.destinations.insert({ ...withoutUndefined(d), data: d.data ?? '' });
    await seedDefaultsFor(repos, [d.name]);
    for (const { priority, host } of associations) {
      const hostid = await placeHost(ctx, repos, host, copySharedHost, restoredHosts, ensureOwner);
      await repos.hosts.associate(d.name, hostid, priority ?? 0);
    }
    createdNames.add(d.name);
    created++;
  }
  // Aliases come with the destinations this restore created (existing ones are left as they
  // are). A backup of a selection may name a target this system lacks: that alias is skipped.
  for (const { aliasFrom, aliasTo } of backup.aliases) {
    if (!createdNames.has(aliasFrom)) continue;
    if (!(await repos.destinations.exists(aliasTo))) {
      ctx.ports.logger.warn('alias skipped: its target destination does not exist', {
        requestId: ctx.requestId,
        aliasFrom,
        aliasTo,
      });
      continue;
    }
    await repos.destinations.addAlias(aliasFrom, aliasTo);
  }
  return created;
}

type HostBody = Backup['destinations'][number]['associations'][number]['host'];

async function placeHost(
  ctx: Ctx,
  repos: Repositories,
  host: HostBody,
  copySharedHost: boolean,
  restoredHosts: Map<number, number>,
  ensureOwner: (name: string | null | undefined) => Promise<void>,
): Promise<number> {
  const original = typeof host.hostid === 'number' ? host.hostid : null;
  if (original !== null && restoredHosts.has(original)) return restoredHosts.get(original)!;
  if (!copySharedHost && host.nickname) {
    const shared = await repos.hosts.sharedByNickname(host.nickname);
    if (shared !== null) return remember(restoredHosts, original, shared);
  }
  const methodName = host.transferMethodName;
  if (methodName && (await repos.references.methods([methodName])).length === 0) {
    throw invalid(`Transfer method ${methodName} not found`);
  }
  await ensureOwner(host.ecuserName);
  const { hostid: _id, passwd, ...fields } = host;
  const id = await repos.hosts.insert({
    ...withoutUndefined(fields),
    data: await sealGivenOptions(fields.data ?? '', ctx.ports.secrets),
    passwdSealed: passwd ? await ctx.ports.secrets.encrypt(passwd) : null,
  });
  return remember(restoredHosts, original, id);
}

const withoutUndefined = <T extends object>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };

function remember(map: Map<number, number>, original: number | null, id: number) {
  if (original !== null) map.set(original, id);
  return id;
}

export const backupHandlers = {
  backupList: list,
  backupGet: get,
  backupPut: put,
} satisfies Handlers<typeof backupOperations>;
