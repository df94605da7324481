import { generateSecret, hashGeneratedSecret, hashPassword } from '../common/crypto.ts';
import { conflict, invalid, notFound } from '../common/errors.ts';
import { audited } from '../console/audit.ts';
import type { Ports } from '../ports.ts';
import { checkPermissions } from './permissions.ts';
import type { ApiClient, ClientOrigin } from './ports.ts';

/** Client management used by the command line and the console (spec §5.1). */

const USERNAME = /^[A-Za-z0-9_.@-]{1,64}$/;

function checkUsername(username: string) {
  if (!USERNAME.test(username)) {
    throw invalid(`Invalid client username: ${username} (1 to 64 letters, digits, '_', '.', '@' or '-')`);
  }
}

export interface ClientView {
  username: string;
  permissions: string[];
  origin: ClientOrigin;
  createdAt: string;
  updatedAt: string;
  lastUsedAt: string | null;
}

export const view = (c: ApiClient): ClientView => ({
  username: c.username,
  permissions: c.permissions,
  origin: c.origin,
  createdAt: c.createdAt.toISOString(),
  updatedAt: c.updatedAt.toISOString(),
  lastUsedAt: c.lastUsedAt?.toISOString() ?? null,
});

/** Creates a client with a generated secret, returned this once. */
export async function create(
  ports: Ports,
  actor: string,
  input: { username: string; permissions: string[]; origin: ClientOrigin },
) {
  checkUsername(input.username);
  const permissions = checkPermissions(input.permissions);
  const secret = generateSecret();
  const now = ports.clock();
  const change = {
    actor,
    action: 'create',
    targetKind: 'API client',
    target: input.username,
    detail: permissions.join(' '),
  };
  await audited(ports, change, async (repos) => {
    const inserted = await repos.clients.insert({
      username: input.username,
      secretHash: hashGeneratedSecret(secret),
      permissions,
      origin: input.origin,
      createdAt: now,
      updatedAt: now,
      lastUsedAt: null,
    });
    if (!inserted) throw conflict(`Client ${input.username} already exists`);
  });
  return { username: input.username, secret };
}

export async function list(ports: Ports) {
  return (await ports.repos.clients.list()).map(view);
}

export async function show(ports: Ports, username: string) {
  const client = await ports.repos.clients.find(username);
  if (!client) throw notFound(`Client ${username} not found`);
  return view(client);
}

/** Changes a stored client and audits it in one transaction; this process forgets its cached record at once. */
async function changeClient(
  ports: Ports,
  actor: string,
  username: string,
  action: string,
  detail: string | null,
  work: (clients: Ports['repos']['clients']) => Promise<boolean>,
) {
  try {
    await audited(ports, { actor, action, targetKind: 'API client', target: username, detail }, async (repos) => {
      if (!(await work(repos.clients))) throw notFound(`Client ${username} not found`);
    });
  } finally {
    ports.credentialCache.forgetClient(username);
  }
}

export async function setPermissions(ports: Ports, actor: string, username: string, permissions: string[]) {
  const checked = checkPermissions(permissions);
  await changeClient(ports, actor, username, 'set permissions', checked.join(' '), (clients) =>
    clients.update(username, { permissions: checked, updatedAt: ports.clock() }),
  );
  return show(ports, username);
}

export async function resetSecret(ports: Ports, actor: string, username: string) {
  const secret = generateSecret();
  await changeClient(ports, actor, username, 'reset secret', null, (clients) =>
    clients.update(username, { secretHash: hashGeneratedSecret(secret), updatedAt: ports.clock() }),
  );
  return { username, secret };
}

export async function remove(ports: Ports, actor: string, username: string) {
  await changeClient(ports, actor, username, 'delete', null, (clients) => clients.delete(username));
}

export interface PropertiesClient {
  line: number;
  username: string;
  password: string;
  permission: string;
}

export type PropertiesOutcome =
  | { line: number; username: string; result: 'created' | 'kept' }
  | { line: number; result: 'skipped'; reason: string };

/**
 * Lines of the `[API]` section: `<username>=<password>:<service-regex>`. The password ends at
 * the first colon, so the expression may contain colons (`(?:...)`).
 */
export function parseProperties(text: string): Array<PropertiesClient | { line: number; reason: string }> {
  const out: Array<PropertiesClient | { line: number; reason: string }> = [];
  let section = '';
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = index + 1;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) return;
    const header = /^\[(.+)\]$/.exec(trimmed);
    if (header) {
      section = header[1]!.trim();
      return;
    }
    if (section !== 'API') return;
    const eq = trimmed.indexOf('=');
    const colon = trimmed.indexOf(':', eq + 1);
    if (eq <= 0 || colon < 0) {
      out.push({ line, reason: 'expected <username>=<password>:<service-regex>' });
      return;
    }
    out.push({
      line,
      username: trimmed.slice(0, eq).trim(),
      password: trimmed.slice(eq + 1, colon),
      permission: trimmed.slice(colon + 1).trim(),
    });
  });
  return out;
}

/** Migrates `[API]` entries into the client store: insert when absent, never overwrite. */
export async function provisionFromProperties(ports: Ports, text: string): Promise<PropertiesOutcome[]> {
  const outcomes: PropertiesOutcome[] = [];
  for (const entry of parseProperties(text)) {
    if (!('username' in entry)) {
      outcomes.push({ line: entry.line, result: 'skipped', reason: entry.reason });
      continue;
    }
    try {
      checkUsername(entry.username);
      if (entry.password === '') throw invalid('empty password');
      const permissions = checkPermissions([entry.permission]);
      if (await ports.repos.clients.find(entry.username)) {
        outcomes.push({ line: entry.line, username: entry.username, result: 'kept' });
        continue;
      }
      const now = ports.clock();
      const inserted = await ports.repos.clients.insert({
        username: entry.username,
        secretHash: await hashPassword(ports.hashing, entry.password),
        permissions,
        origin: 'properties',
        createdAt: now,
        updatedAt: now,
        lastUsedAt: null,
      });
      outcomes.push({ line: entry.line, username: entry.username, result: inserted ? 'created' : 'kept' });
    } catch (e) {
      outcomes.push({ line: entry.line, result: 'skipped', reason: e instanceof Error ? e.message : String(e) });
    }
  }
  return outcomes;
}
