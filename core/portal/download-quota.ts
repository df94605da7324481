import { ServiceError } from '../common/errors.ts';
import type { Quota } from './options.ts';

/** The reason a download is refused or cut over `portal.maxDownloadBytes`, as the login check gives it. */
export const DOWNLOAD_QUOTA_EXCEEDED = 'Download quota exceeded';

/** A download cut short: its user's quota is spent by what it and the user's other downloads sent. */
export const downloadQuotaExceeded = () => new ServiceError('throttled', DOWNLOAD_QUOTA_EXCEEDED, 60);

/** One download's share of its user's quota: the bytes it may still send, asked before they go. */
export interface DownloadMeter {
  /** How many of `bytes` may go now: all of them, the quota's last ones, or 0 once it is spent. */
  allow(bytes: number): number;
  /** The download ended and its traffic is stored: what it sent is counted from the store from now on. */
  close(): void;
}

/** A user's downloads running in this process, with what the quota's period holds for them. */
interface UserDownloads {
  /** The traffic of the period stored when the first of them started, with what each that ended added. */
  stored: number;
  /** Bytes sent by those still running: the store counts them only once each ends. */
  sending: number;
  running: number;
}

/**
 * The download quota as bytes go, for every download of a user at once: the store holds a
 * download's traffic only once it ends, so downloads running together (three of a large file
 * started while the quota has room) would each see the quota as it was and each go whole. Here each
 * asks before sending more, and what they sent so far counts for all of them. One per process; the
 * store's traffic brings in what other processes recorded, as each download starts.
 */
export class DownloadLedger {
  private readonly users = new Map<string, UserDownloads>();

  /**
   * A download of the user starts, `stored` being its traffic of the quota's period as the store
   * has it now; null when the quota is spent already (the download must not start).
   */
  open(userId: string, quota: Quota, stored: number): DownloadMeter | null {
    let user = this.users.get(userId);
    if (user === undefined) {
      user = { stored, sending: 0, running: 0 };
      this.users.set(userId, user);
    }
    // What ended meanwhile is in both; another process's traffic only in the store's.
    user.stored = Math.max(user.stored, stored);
    if (user.stored + user.sending >= quota.maxBytes) {
      if (user.running === 0) this.users.delete(userId);
      return null;
    }
    user.running++;
    const counted = user;
    let sent = 0;
    let closed = false;
    return {
      allow(bytes) {
        const left = Math.max(0, quota.maxBytes - counted.stored - counted.sending);
        const allowed = closed ? 0 : Math.min(bytes, left);
        counted.sending += allowed;
        sent += allowed;
        return allowed;
      },
      close: () => {
        if (closed) return;
        closed = true;
        counted.sending -= sent;
        counted.stored += sent;
        if (--counted.running === 0) this.users.delete(userId);
      },
    };
  }
}
