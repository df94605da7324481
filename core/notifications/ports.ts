import type { MailGroup } from './policy.ts';

/** A group claimed by a sender: its rows are the sender's until the claim's lease ends. */
export interface ClaimedGroup extends MailGroup {
  /** The claim's token with the group's range of ids: what finishes or releases exactly its rows. */
  claim: string;
  firstId: number;
  lastId: number;
}

export interface MailOutboxRepo {
  /**
   * Up to `groups` groups of unsent rows, oldest first, whose first row was written before `ripeBefore`
   * (later rows of the same group join it until then), each with its first `listed` rows; every row of
   * them is claimed until `until`.
   */
  claim(args: {
    now: Date;
    until: Date;
    ripeBefore: Date;
    groups: number;
    listed: number;
    newClaim: () => string;
  }): Promise<ClaimedGroup[]>;
  /** The group's rows done: sent, or given up with why. */
  finish(group: ClaimedGroup, outcome: string, at: Date): Promise<void>;
  /** The claims' rows back to the queue, counted as an attempt with its error. */
  release(claims: readonly string[], error: string): Promise<void>;
  /** Deletes rows done before `before`. */
  prune(before: Date): Promise<number>;
  /** Rows not sent yet, and the age in seconds of the oldest (0 when none): /metrics. */
  pending(): Promise<{ count: number; oldestSeconds: number }>;
}
