import type { Ports, Repositories } from '../ports.ts';

/** One change worth recording: who (a web user's id, or `cli`), what, on which record; never a secret. */
export interface AuditedChange {
  actor: string;
  action: string;
  targetKind: string;
  target: string;
  detail?: string | null;
}

/**
 * Runs a change and writes its audit row in the same transaction, whatever the entry point
 * (console or command line): both are stored, or neither.
 */
export function audited<T>(
  ports: Ports,
  change: AuditedChange | ((result: T) => AuditedChange),
  work: (repos: Repositories) => Promise<T>,
): Promise<T> {
  return ports.repos.transaction(async (repos) => {
    const result = await work(repos);
    await recordIn(repos, ports.clock(), typeof change === 'function' ? change(result) : change);
    return result;
  });
}

/** Writes an audit row with repositories already bound to the change's transaction. */
export const recordIn = (repos: Repositories, at: Date, change: AuditedChange) =>
  repos.console.audit({ at, ...change, detail: change.detail ?? null });

export const auditTrail = (ports: Ports, limit = 200) => ports.repos.console.auditTrail(limit);
