import { deaEvent, inhEvent } from '../common/events.ts';
import type { Ports } from '../ports.ts';
import type { PortalIdentity } from './access.ts';
import { PortalLoginRefused } from './access.ts';
import { connectionsExceeded } from './login.ts';
import type { PortalFile } from './ports.ts';
import { DOWNLOAD_QUOTA_EXCEEDED, type QuotaMeter, uploadQuotaExceeded } from './quota-ledger.ts';

/** How long a running transfer's count holds without renewal: a server that died frees it after this. */
export const PORTAL_CONNECTION_LEASE_MS = 60_000;

export interface PortalTransferStart {
  protocol: string;
  /** This server's name, for the INH line and the connection's row. */
  server: string;
  address: string;
  action: 'download' | 'upload';
  /** Its bytes were counted against the quota already (a multipart upload's, as its parts came): not metered. */
  counted?: boolean;
}

export interface PortalTransfer {
  /**
   * How many of `bytes` may go now, asked before they are sent (a download) or kept (an upload): a
   * transfer stops at its user's quota of its direction, shared with the user's other transfers of
   * that direction running at once (QuotaLedger).
   */
  allow(bytes: number): number;
  /** What the quota leaves now to the user's transfers of this direction; Infinity when there is none. */
  left(): number;
  /**
   * Ends the transfer: frees its connection, adds its bytes to the user's traffic and writes its INH
   * line (when `file` names what moved; a transfer that moved nothing of a file writes none).
   */
  finish(result: {
    bytes: number;
    file: (PortalFile & { destination: string }) | null;
    /** The bytes to add to the traffic when not `bytes` (a multipart upload's, counted as its parts came). */
    trafficBytes?: number;
  }): Promise<void>;
}

/**
 * Counts a download or upload against the user's `portal.maxConnections` on every server, for as
 * long as it runs: the count is renewed while it runs, and lapses if this server dies. Throws
 * PortalLoginRefused (over its limit), with its DEA line, when the user already has that many running
 * or its download quota is spent; the upload quota's error when its upload quota is.
 */
export async function startPortalTransfer(
  ports: Ports,
  who: PortalIdentity,
  start: PortalTransferStart,
): Promise<PortalTransfer> {
  const startedAt = ports.clock();
  const context = `${start.protocol}:${start.address}`;
  const meter = start.counted ? null : await quotaMeter(ports, who, start.action, startedAt);
  if (meter === 'spent' && start.action === 'upload') throw uploadQuotaExceeded();
  if (meter === 'spent') {
    ports.events.write(deaEvent({ at: startedAt, userId: who.userId, message: DOWNLOAD_QUOTA_EXCEEDED, context }));
    throw new PortalLoginRefused(true);
  }
  const id = await ports.repos.portal.openConnection({
    userId: who.userId,
    server: start.server,
    protocol: start.protocol,
    max: who.settings.maxConnections,
    now: startedAt,
    leaseMs: PORTAL_CONNECTION_LEASE_MS,
  });
  if (id === null) {
    // As a login over the limit is: a login let in a moment ago (PortalLoginMemory) counts nothing.
    meter?.close();
    const reason = connectionsExceeded(who.settings.maxConnections);
    ports.events.write(deaEvent({ at: startedAt, userId: who.userId, message: reason, context }));
    throw new PortalLoginRefused(true);
  }
  const renew = setInterval(() => {
    const until = new Date(ports.clock().getTime() + PORTAL_CONNECTION_LEASE_MS);
    ports.repos.portal
      .renewConnections([id], until)
      .catch((e: unknown) => ports.logger.warn('could not renew a portal connection', { reason: String(e) }));
  }, PORTAL_CONNECTION_LEASE_MS / 3);
  let finished = false;
  return {
    allow: (bytes) => (meter === null ? bytes : meter.allow(bytes)),
    left: () => (meter === null ? Number.POSITIVE_INFINITY : meter.left()),
    async finish({ bytes, file, trafficBytes = bytes }) {
      if (finished) return;
      finished = true;
      clearInterval(renew);
      const at = ports.clock();
      const minute = new Date(Math.floor(startedAt.getTime() / 60_000) * 60_000);
      const upload = start.action === 'upload';
      await ports.repos.portal
        .endConnection(id, {
          userId: who.userId,
          minute,
          protocol: start.protocol,
          downloadBytes: upload ? 0 : trafficBytes,
          uploadBytes: upload ? trafficBytes : 0,
          downloads: upload || file === null ? 0 : 1,
          uploads: upload && file !== null ? 1 : 0,
        })
        .finally(() => meter?.close());
      if (file === null) return;
      ports.events.write(
        inhEvent({
          at,
          transferId: file.transferId,
          destination: file.destination,
          destinationType: file.destinationType ?? '',
          fileName: file.path,
          fileSize: file.size,
          scheduledTime: file.scheduledAt,
          startTime: startedAt,
          userId: who.userId,
          country: who.country,
          bytes,
          protocol: start.protocol,
          server: start.server,
          address: start.address,
          expiryTime: file.expiresAt,
          action: start.action,
        }),
      );
    },
  };
}

/**
 * The transfer's share of the user's quota of its direction, from the traffic stored for the quota's
 * period: `spent` when nothing is left of it, null when the user has none (nothing is metered).
 */
async function quotaMeter(
  ports: Ports,
  who: PortalIdentity,
  action: PortalTransferStart['action'],
  now: Date,
): Promise<QuotaMeter | 'spent' | null> {
  const upload = action === 'upload';
  const quota = upload ? who.settings.upload : who.settings.download;
  if (quota === null) return null;
  const since = new Date(now.getTime() - quota.periodMs);
  const traffic = await ports.repos.portal.trafficSince(who.userId, since);
  const ledger = upload ? ports.portalUploads : ports.portalDownloads;
  return ledger.open(who.userId, quota, upload ? traffic.uploadBytes : traffic.downloadBytes) ?? 'spent';
}
