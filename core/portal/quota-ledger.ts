import { ServiceError } from '../common/errors.ts';
import type { Quota } from './options.ts';

/** The reason a download is refused or cut over `portal.maxDownloadBytes`, as the login check gives it. */
export const DOWNLOAD_QUOTA_EXCEEDED = 'Download quota exceeded';

/** A download cut short: its user's quota is spent by what it and the user's other downloads sent. */
export const downloadQuotaExceeded = () => new ServiceError('throttled', DOWNLOAD_QUOTA_EXCEEDED, 60);

/** An upload refused or cut: its user's `portal.maxUploadBytes` is spent by it and the user's other uploads. */
export const uploadQuotaExceeded = () => new ServiceError('throttled', 'Upload quota exceeded', 60);

/** One transfer's share of its user's quota: the bytes it may still move, asked before they move. */
export interface QuotaMeter {
  /** How many of `bytes` may move now: all of them, the quota's last ones, or 0 once it is spent. */
  allow(bytes: number): number;
  /** What the quota leaves now to the user's transfers, this one included. */
  left(): number;
  /** The transfer ended and its traffic is stored: what it moved is counted from the store from now on. */
  close(): void;
}

/** A user's transfers of one direction running in this process, with what the quota's period holds for them. */
interface UserTransfers {
  /** The traffic of the period stored when the first of them started, with what each that ended added. */
  stored: number;
  /** Bytes moved by those still running: the store counts them only once each ends. */
  moving: number;
  running: number;
}

/**
 * A quota (downloads', or uploads') as bytes move, for every transfer of a user at once: the store
 * holds a transfer's traffic only once it ends, so transfers running together (three of a large file
 * started while the quota has room) would each see the quota as it was and each go whole. Here each
 * asks before moving more, and what they moved so far counts for all of them. One per process and
 * direction; the store's traffic brings in what other processes recorded, as each transfer starts.
 */
export class QuotaLedger {
  private readonly users = new Map<string, UserTransfers>();

  /**
   * A transfer of the user starts, `stored` being its traffic of the quota's period as the store
   * has it now; null when the quota is spent already (the transfer must not start).
   */
  open(userId: string, quota: Quota, stored: number): QuotaMeter | null {
    let user = this.users.get(userId);
    if (user === undefined) {
      user = { stored, moving: 0, running: 0 };
      this.users.set(userId, user);
    }
    // What ended meanwhile is in both; another process's traffic only in the store's.
    user.stored = Math.max(user.stored, stored);
    if (user.stored + user.moving >= quota.maxBytes) {
      if (user.running === 0) this.users.delete(userId);
      return null;
    }
    user.running++;
    const counted = user;
    let moved = 0;
    let closed = false;
    const left = () => Math.max(0, quota.maxBytes - counted.stored - counted.moving);
    return {
      allow(bytes) {
        const allowed = closed ? 0 : Math.min(bytes, left());
        counted.moving += allowed;
        moved += allowed;
        return allowed;
      },
      left: () => (closed ? 0 : left()),
      close: () => {
        if (closed) return;
        closed = true;
        counted.moving -= moved;
        counted.stored += moved;
        if (--counted.running === 0) this.users.delete(userId);
      },
    };
  }
}
