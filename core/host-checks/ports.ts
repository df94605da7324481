import type { DisseminationHost } from '../dissemination/ports.ts';
import type { CheckResult } from './policy.ts';

/** A host as its check needs it. */
export interface CheckedHost extends DisseminationHost {
  nickname: string | null;
  checkFilename: string | null;
  checkFrequency: number | null;
}

/** A host taken for one check: `claim` fences the result it writes. */
export interface HostCheckClaim {
  host: CheckedHost;
  claim: string;
}

/** The latest check of a host, once per destination it serves: a /metrics series. */
export interface HostCheckSeries {
  hostId: number;
  destination: string;
  at: Date;
  ok: boolean;
  durationMs: number;
}

/** A destination's host with `check` on, or with a result kept from when it was on. */
export interface HostCheckShown {
  hostId: number;
  nickname: string | null;
  host: string;
  method: string | null;
  check: boolean;
  checkFrequency: number | null;
  checkFilename: string | null;
  /** When the check under way began; null when none is. */
  runningSince: Date | null;
  latest: CheckResult | null;
  /** The results before the latest, newest first. */
  history: CheckResult[];
}

export interface HostCheckRepo {
  /**
   * Takes up to `limit` due hosts (active, `check` on, their last check begun at least their frequency
   * ago, `defaultFrequencyMs` for none, and none under way), never more than `most` under way over every
   * server: each is this claim's until its lease ends.
   */
  claim(
    claim: string,
    leaseMs: number,
    limit: number,
    most: number,
    defaultFrequencyMs: number,
  ): Promise<HostCheckClaim[]>;
  /** Records the result of a claimed check and ends its lease; false when the claim was lost meanwhile. */
  finish(claim: string, hostId: number, result: CheckResult): Promise<boolean>;
  /** The latest check of each host with `check` on, once per destination it serves. */
  series(): Promise<HostCheckSeries[]>;
  /** The destination's hosts that are checked (or were), in association priority order. */
  ofDestination(destination: string): Promise<HostCheckShown[]>;
}
