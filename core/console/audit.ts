import type { Ports } from '../ports.ts';

/** Who changed which client, user or field, and when; never a secret. */
export async function recordAudit(ports: Ports, actor: string, action: string, targetKind: string, target: string, detail: string | null = null) {
  await ports.repos.console.audit({ at: ports.clock(), actor, action, targetKind, target, detail });
}

export const auditTrail = (ports: Ports, limit = 200) => ports.repos.console.auditTrail(limit);
