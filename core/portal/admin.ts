import { invalid, notFound } from '../common/errors.ts';
import { type AuditedChange, audited, recordIn } from '../console/audit.ts';
import type { IncomingUser } from '../incoming-users/ports.ts';
import type { Ports, Repositories } from '../ports.ts';
import { portalOperations } from './operation-names.ts';
import { checkPortalOption, PORTAL_OPTIONS } from './options.ts';
import { PORTAL_OPERATIONS, type PortalOperation, type Subscriber, type Traffic } from './ports.ts';
import { approveSubscriber, revokeSubscriber } from './registration.ts';

/**
 * What an operator does to an incoming user's portal access, from the command line or the console:
 * permissions, options, subscribers, and its traffic. Every change is audited in its transaction;
 * `actor` is the web user's id, or `cli`.
 */

const TARGET_KIND = 'incoming user';

export async function requireUser(repos: Repositories, id: string): Promise<IncomingUser> {
  const user = await repos.incomingUsers.find(id);
  if (!user) throw notFound(`Incoming user ${id} not found`);
  return user;
}

export async function listPermissions(ports: Ports, userId: string): Promise<PortalOperation[]> {
  await requireUser(ports.repos, userId);
  return ports.repos.portal.permissions(userId);
}

/**
 * Moves the user's permissions to `wanted(current)`, with an audit row naming what was granted
 * and revoked; nothing is written when nothing changes. Answers the permissions after it.
 */
async function changePermissions(
  ports: Ports,
  actor: string,
  userId: string,
  wanted: (current: ReadonlySet<PortalOperation>) => ReadonlySet<PortalOperation>,
): Promise<PortalOperation[]> {
  const after = await ports.repos.transaction(async (repos) => {
    await requireUser(repos, userId);
    const current = new Set(await repos.portal.permissions(userId));
    const target = wanted(current);
    const granted = PORTAL_OPERATIONS.filter((op) => target.has(op) && !current.has(op));
    const revoked = PORTAL_OPERATIONS.filter((op) => current.has(op) && !target.has(op));
    if (granted.length > 0) await repos.portal.grant(userId, granted);
    if (revoked.length > 0) await repos.portal.revoke(userId, revoked);
    if (granted.length + revoked.length > 0) {
      const detail = [
        granted.length > 0 && `granted ${granted.join(', ')}`,
        revoked.length > 0 && `revoked ${revoked.join(', ')}`,
      ];
      await recordIn(repos, ports.clock(), {
        actor,
        action: 'change portal permissions',
        targetKind: TARGET_KIND,
        target: userId,
        detail: detail.filter(Boolean).join('; '),
      });
    }
    return PORTAL_OPERATIONS.filter((op) => target.has(op));
  });
  ports.portalLogins.forget(userId);
  return after;
}

export function grantPermissions(ports: Ports, actor: string, userId: string, names: readonly string[]) {
  const ops = portalOperations(names);
  return changePermissions(ports, actor, userId, (current) => new Set([...current, ...ops]));
}

export function revokePermissions(ports: Ports, actor: string, userId: string, names: readonly string[]) {
  const ops = portalOperations(names);
  return changePermissions(ports, actor, userId, (current) => new Set([...current].filter((op) => !ops.includes(op))));
}

/** Exactly these permissions (the console's checkboxes): none is allowed, and keeps the user out. */
export function setPermissions(ports: Ports, actor: string, userId: string, names: readonly string[]) {
  const ops = names.length === 0 ? [] : portalOperations(names);
  return changePermissions(ports, actor, userId, () => new Set(ops));
}

export async function listOptions(ports: Ports, userId: string): Promise<Record<string, string>> {
  await requireUser(ports.repos, userId);
  const stored = await ports.repos.portal.options(userId);
  return Object.fromEntries(Object.entries(stored).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface OptionView {
  name: string;
  /** What a value must look like. */
  expects: string;
  /** The stored value; null when the default applies. */
  value: string | null;
  /** A stored option the portal does not know (from an older or newer version): it can only be removed. */
  unknown: boolean;
}

/** Every option the portal knows with its stored value, then any stored option it does not know. */
export function optionViews(stored: Readonly<Record<string, string>>): OptionView[] {
  const known = Object.entries(PORTAL_OPTIONS).map(([name, expects]) => ({
    name,
    expects,
    value: stored[name] ?? null,
    unknown: false,
  }));
  const others = Object.keys(stored)
    .filter((name) => !Object.hasOwn(PORTAL_OPTIONS, name))
    .sort()
    .map((name) => ({ name, expects: 'not an option of this version', value: stored[name]!, unknown: true }));
  return [...known, ...others];
}

/**
 * Sets an option (checked against what it expects) or removes it (`value` null). Answers whether
 * anything changed: setting the stored value again, or removing an option that is not set, writes
 * nothing and no audit row.
 */
export async function setOption(
  ports: Ports,
  actor: string,
  userId: string,
  name: string,
  value: string | null,
): Promise<boolean> {
  const text = value?.trim() ?? null;
  if (text === '') throw invalid(`An empty value for ${name}: give a value, or remove the option`);
  if (text !== null) {
    const refusal = checkPortalOption(name, text);
    if (refusal !== null) throw invalid(refusal);
  }
  const changed = await ports.repos.transaction(async (repos) => {
    await requireUser(repos, userId);
    const stored = await repos.portal.options(userId);
    // Removing is allowed for any stored name, so an option this version no longer knows can go.
    if (text === null && !Object.hasOwn(PORTAL_OPTIONS, name) && !Object.hasOwn(stored, name)) {
      throw invalid(checkPortalOption(name, '') ?? `Unknown portal option ${name}`);
    }
    if ((stored[name] ?? null) === text) return false;
    await repos.portal.setOption(userId, name, text);
    await recordIn(repos, ports.clock(), {
      actor,
      action: text === null ? 'remove portal option' : 'set portal option',
      targetKind: TARGET_KIND,
      target: userId,
      detail: text === null ? name : `${name}=${text}`,
    });
    return true;
  });
  if (changed) ports.portalLogins.forget(userId);
  return changed;
}

export async function listSubscribers(ports: Ports, userId: string): Promise<Subscriber[]> {
  await requireUser(ports.repos, userId);
  return ports.repos.portal.subscribers(userId);
}

/** The subscriber, when it is one of this user's; the id alone could name another user's. */
async function subscriberOf(repos: Repositories, userId: string, id: number): Promise<Subscriber> {
  await requireUser(repos, userId);
  const subscriber = await repos.portal.subscriber(id);
  if (subscriber === null || subscriber.userId !== userId) {
    throw notFound(`Subscriber ${id} of incoming user ${userId} not found`);
  }
  return subscriber;
}

const subscriberChange = (actor: string, action: string, s: Subscriber): AuditedChange => ({
  actor,
  action,
  targetKind: TARGET_KIND,
  target: s.userId,
  // The subscriber's id and address say whom; the password mailed on approval is never recorded.
  detail: `subscriber ${s.id} <${s.email}>`,
});

/** Activates a verified subscriber and e-mails it a password (an error says so when no mail can go). */
export async function approve(ports: Ports, actor: string, userId: string, id: number): Promise<Subscriber> {
  const subscriber = await subscriberOf(ports.repos, userId, id);
  return approveSubscriber(ports, id, subscriberChange(actor, 'approve portal subscriber', subscriber));
}

/** Ends a subscriber's access; its password opens nothing any more. */
export async function revoke(ports: Ports, actor: string, userId: string, id: number): Promise<Subscriber> {
  const subscriber = await subscriberOf(ports.repos, userId, id);
  await audited(ports, subscriberChange(actor, 'revoke portal subscriber', subscriber), (repos) =>
    revokeSubscriber({ ...ports, repos }, id),
  );
  ports.portalLogins.forget(userId);
  return { ...subscriber, status: 'revoked' };
}

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

export type TrafficStep = 'hour' | 'minute';
export type TrafficBucket = Traffic & { start: Date };

const none = (): Traffic => ({ downloadBytes: 0, uploadBytes: 0, downloads: 0, uploads: 0 });
const add = (into: Traffic, t: Traffic) => {
  into.downloadBytes += t.downloadBytes;
  into.uploadBytes += t.uploadBytes;
  into.downloads += t.downloads;
  into.uploads += t.uploads;
};

/**
 * The user's traffic over the last 24 hours, every hour (24) or minute (1,440) present, the
 * current one last and empty ones at zero, with the total; for a chart.
 */
export async function dayOfTraffic(ports: Ports, userId: string, step: TrafficStep = 'hour') {
  await requireUser(ports.repos, userId);
  return trafficOf(ports, userId, step);
}

async function trafficOf(ports: Ports, userId: string, step: TrafficStep) {
  const size = step === 'hour' ? HOUR_MS : MINUTE_MS;
  const count = DAY_MS / size;
  const since = new Date(Math.floor(ports.clock().getTime() / size) * size - (count - 1) * size);
  const buckets: TrafficBucket[] = Array.from({ length: count }, (_, i) => ({
    start: new Date(since.getTime() + i * size),
    ...none(),
  }));
  const total = none();
  for (const row of await ports.repos.portal.trafficSeries(userId, since)) {
    const bucket = buckets[Math.floor((row.minute.getTime() - since.getTime()) / size)];
    // A row stamped ahead of this process's clock (another server's) is left out of the chart.
    if (!bucket) continue;
    add(bucket, row);
    add(total, row);
  }
  return { step, since, buckets, total };
}

/** Everything the console shows of one incoming user's portal access. */
export async function portalAccount(ports: Ports, userId: string) {
  const user = await requireUser(ports.repos, userId);
  const [destinations, permissions, options, subscribers, lastLogin, traffic] = await Promise.all([
    ports.repos.incomingUsers.associations(userId),
    ports.repos.portal.permissions(userId),
    ports.repos.portal.options(userId),
    ports.repos.portal.subscribers(userId),
    ports.repos.portal.lastLogin(userId),
    trafficOf(ports, userId, 'hour'),
  ]);
  const { passwordSealed: _sealed, ...shown } = user;
  return { user: shown, destinations, permissions, options: optionViews(options), subscribers, lastLogin, traffic };
}
