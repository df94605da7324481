import { deaEvent, inhEvent } from '../common/events.ts';
import type { Ports } from '../ports.ts';
import type { PortalIdentity } from './access.ts';
import { PortalLoginRefused } from './access.ts';
import { DOWNLOAD_QUOTA_EXCEEDED, type DownloadMeter } from './download-quota.ts';
import { connectionsExceeded } from './login.ts';
import type { PortalFile } from './ports.ts';

/** How long a running transfer's count holds without renewal: a server that died frees it after this. */
export const PORTAL_CONNECTION_LEASE_MS = 60_000;

export interface PortalTransferStart {
  protocol: string;
  /** This server's name, for the INH line and the connection's row. */
  server: string;
  address: string;
  action: 'download' | 'upload';
}

export interface PortalTransfer {
  /**
   * How many of `bytes` may go now, asked before they are sent: a download stops at its user's
   * download quota, shared with the user's other downloads (DownloadLedger); an upload is not held here.
   */
  allow(bytes: number): number;
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
 * PortalLoginRefused (over its limit), with its DEA line, when the user already has that many running.
 */
export async function startPortalTransfer(
  ports: Ports,
  who: PortalIdentity,
  start: PortalTransferStart,
): Promise<PortalTransfer> {
  const startedAt = ports.clock();
  const context = `${start.protocol}:${start.address}`;
  const meter = start.action === 'download' ? await downloadMeter(ports, who, startedAt) : null;
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
 * The download's share of the user's download quota, from the traffic stored for the quota's
 * period: `spent` when nothing is left of it, null when the user has none (nothing is metered).
 */
async function downloadMeter(ports: Ports, who: PortalIdentity, now: Date): Promise<DownloadMeter | 'spent' | null> {
  const quota = who.settings.download;
  if (quota === null) return null;
  const since = new Date(now.getTime() - quota.periodMs);
  const stored = (await ports.repos.portal.trafficSince(who.userId, since)).downloadBytes;
  return ports.portalDownloads.open(who.userId, quota, stored) ?? 'spent';
}
