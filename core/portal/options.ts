import { parseDuration } from '../data-files/schedule.ts';
import { DEFAULT_PORTAL_MAX_CONNECTIONS } from './login.ts';
import { PORTAL_OPERATIONS, type PortalOperation } from './ports.ts';

/**
 * A user's portal options, as stored (`portal.*` name → text), read once into what the portal
 * decides with. An option that can't be read is refused when it is set (see checkPortalOption),
 * so reading falls back to the default rather than failing a login.
 */
export interface PortalSettings {
  /** Transfers at once over every server; below 0: unlimited. */
  maxConnections: number;
  download: Quota | null;
  upload: Quota | null;
  /** Protocols this user may not use (`https`, `sftp`, `s3`). */
  excludeProtocols: string[];
  /** Per operation, the paths (below `/portal/data/`) it is allowed on; none: every path. */
  pathRules: Partial<Record<PortalOperation, RegExp>>;
  /** Self-service: a verified subscriber is activated without an operator. */
  registrationAutoApprove: boolean;
}

/** At most `maxBytes` moved over the last `periodMs`. */
export interface Quota {
  maxBytes: number;
  periodMs: number;
}

const DEFAULT_QUOTA_PERIOD_MS = 24 * 3600_000;

/** The options the portal knows, with what each expects. */
export const PORTAL_OPTIONS: Readonly<Record<string, string>> = {
  'portal.maxConnections': 'an integer; below 0: unlimited (default 10)',
  'portal.maxDownloadBytes': 'bytes, a whole number',
  'portal.downloadPeriod': 'a duration such as 24h or P1D (default 24h)',
  'portal.maxUploadBytes': 'bytes, a whole number',
  'portal.uploadPeriod': 'a duration such as 24h or P1D (default 24h)',
  'portal.excludeProtocols': 'protocols separated by commas: https, sftp, s3',
  'portal.registrationAutoApprove': 'true or false',
  ...Object.fromEntries(
    PORTAL_OPERATIONS.map((op) => [`portal.${op}PathPermRegex`, 'a regular expression matching whole paths']),
  ),
};

/** Why a value can't be stored for this option, or null when it can. */
export function checkPortalOption(name: string, value: string): string | null {
  const expected = PORTAL_OPTIONS[name];
  if (expected === undefined) {
    return `Unknown portal option ${name}; known: ${Object.keys(PORTAL_OPTIONS).join(', ')}`;
  }
  const ok =
    name === 'portal.maxConnections'
      ? /^-?\d{1,9}$/.test(value)
      : name.endsWith('Bytes')
        ? /^\d{1,15}$/.test(value)
        : name.endsWith('Period')
          ? parseDuration(value) !== null && parseDuration(value)! > 0
          : name === 'portal.registrationAutoApprove'
            ? value === 'true' || value === 'false'
            : name.endsWith('PathPermRegex')
              ? compiles(value)
              : true;
  return ok ? null : `Invalid value for ${name}: '${value}' (${expected} expected)`;
}

const compiles = (source: string) => {
  try {
    wholePath(source);
    return true;
  } catch {
    return false;
  }
};

/** Java's `String.matches`: the expression must match the whole path. */
const wholePath = (source: string) => new RegExp(`^(?:${source})$`, 'u');

export function portalSettings(options: Readonly<Record<string, string>>): PortalSettings {
  const usable = (name: string) => {
    const value = options[name];
    return value !== undefined && checkPortalOption(name, value) === null ? value : undefined;
  };
  const quota = (bytes: string, period: string): Quota | null => {
    const max = usable(bytes);
    if (max === undefined) return null;
    const periodText = usable(period);
    return {
      maxBytes: Number(max),
      periodMs: periodText === undefined ? DEFAULT_QUOTA_PERIOD_MS : parseDuration(periodText)!,
    };
  };
  const pathRules: Partial<Record<PortalOperation, RegExp>> = {};
  for (const op of PORTAL_OPERATIONS) {
    const source = usable(`portal.${op}PathPermRegex`);
    if (source !== undefined) pathRules[op] = wholePath(source);
  }
  const max = usable('portal.maxConnections');
  return {
    maxConnections: max === undefined ? DEFAULT_PORTAL_MAX_CONNECTIONS : Number(max),
    download: quota('portal.maxDownloadBytes', 'portal.downloadPeriod'),
    upload: quota('portal.maxUploadBytes', 'portal.uploadPeriod'),
    excludeProtocols: (options['portal.excludeProtocols'] ?? '')
      .split(',')
      .map((p) => p.trim().toLowerCase())
      .filter((p) => p !== ''),
    pathRules,
    registrationAutoApprove: usable('portal.registrationAutoApprove') === 'true',
  };
}

/** Whether the user may do `operation` on `path` (a destination's name, then the file's path). */
export function allowed(
  permissions: readonly PortalOperation[],
  settings: PortalSettings,
  operation: PortalOperation,
  path: string,
): boolean {
  if (!permissions.includes(operation)) return false;
  const rule = settings.pathRules[operation];
  return rule === undefined || rule.test(path);
}
