/**
 * Who gets into the data portal, by whatever protocol: one check, in the reference's order. The
 * client only ever hears "Login failed"; the reason goes to the DEA event line. Pure: the caller
 * gathers the facts (checking only the credentials `credentialsToCheck` names for the user's mode).
 */

export const PORTAL_MODES = ['standard-login', 'open-access', 'self-service'] as const;
export type PortalMode = (typeof PORTAL_MODES)[number];

/** What answers a refused login, whatever the reason. */
export const LOGIN_FAILED = 'Login failed';

/** The facts a login is judged on. */
export interface LoginFacts {
  user: { id: string; active: boolean; portalService: string } | null;
  /** The password given matched the user's own (or, with `credentials: 'key'`, a key of its own signed). */
  userPasswordMatches: boolean;
  /** What the user's credentials were: its password (the default), or one of its authorized keys. */
  credentials?: 'password' | 'key';
  /** The password given matched one of the user's active subscribers' (self-service). */
  subscriberPasswordMatches: boolean;
  /** The protocol of this login, when the user's `portal.excludeProtocols` names it. */
  excludedProtocol?: string | null;
  /** The user's transfers in progress now, over every protocol and server. */
  connections: number;
  /** `portal.maxConnections` (default 10); below 0: unlimited. */
  maxConnections: number;
  uploadQuotaSpent: boolean;
  downloadQuotaSpent: boolean;
  destinations: number;
  permissions: number;
}

export type LoginDecision = { ok: true; mode: PortalMode } | { ok: false; reason: string; overLimit?: boolean };

export const DEFAULT_PORTAL_MAX_CONNECTIONS = 10;

/** The mode of a user's `portalService`; an unknown one is standard-login, the reference's default. */
export const portalMode = (portalService: string): PortalMode =>
  (PORTAL_MODES as readonly string[]).includes(portalService) ? (portalService as PortalMode) : 'standard-login';

/** Which password a login of this mode is checked against. */
export const credentialsToCheck = (mode: PortalMode): 'user' | 'subscriber' | 'none' =>
  mode === 'standard-login' ? 'user' : mode === 'self-service' ? 'subscriber' : 'none';

export function checkLogin(facts: LoginFacts): LoginDecision {
  const { user } = facts;
  if (user === null) return refused('Not found');
  if (!user.active) return refused('Disabled');
  const mode = portalMode(user.portalService);
  const checked = credentialsToCheck(mode);
  if (checked === 'user' && !facts.userPasswordMatches) {
    return refused(facts.credentials === 'key' ? 'Public key authentication failed' : 'Password authentication failed');
  }
  if (checked === 'subscriber' && !facts.subscriberPasswordMatches) {
    return refused('Subscriber password authentication failed');
  }
  if (facts.excludedProtocol) return refused(`Protocol ${facts.excludedProtocol} not allowed`);
  if (facts.maxConnections >= 0 && facts.connections >= facts.maxConnections) {
    return overLimit(connectionsExceeded(facts.maxConnections));
  }
  if (facts.uploadQuotaSpent) return overLimit('Upload quota exceeded');
  if (facts.downloadQuotaSpent) return overLimit('Download quota exceeded');
  if (facts.destinations === 0) return refused('No associated Destinations');
  if (facts.permissions === 0) return refused('No associated Permissions');
  return { ok: true, mode };
}

/** The reason of a refusal over `portal.maxConnections`, at login or at a transfer's start. */
export const connectionsExceeded = (max: number) => `Maximum number of connections exceeded (${max})`;

const refused = (reason: string): LoginDecision => ({ ok: false, reason });
/** A refusal that passes with time (a transfer ends, a quota's period rolls on): HTTP answers it 429. */
const overLimit = (reason: string): LoginDecision => ({ ok: false, reason, overLimit: true });
