import type { StepFilter, StepKey, StepState } from './model.ts';

export interface MonitoringRepo {
  /** The latest state of the notification's key, locked until the transaction ends. */
  latest(key: StepKey): Promise<StepState | null>;
  /**
   * The latest states of many keys (by stepKeyOf; absent when the key has none), all locked until
   * the transaction ends, as `latest` locks one.
   */
  latestOf(keys: StepKey[]): Promise<Map<string, StepState>>;
  /** Appends the notification to the history and makes it the key's latest state. */
  record(state: StepState): Promise<void>;
  /** `record` of each state in order, in a few statements. */
  recordAll(states: StepState[]): Promise<void>;
  /** Refreshes the planner's statistics of the monitoring tables after a large import. */
  analyze(): Promise<void>;
  /** For each product and time: the latest state of every key at its latest product time. */
  summary(filter: StepFilter): Promise<StepState[]>;
  /** Every notification of one step, newest first. */
  history(
    filter: Required<Pick<StepFilter, 'product' | 'time' | 'step' | 'type'>> & Pick<StepFilter, 'status'>,
  ): Promise<StepState[]>;
}
