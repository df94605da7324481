import type { StepFilter, StepNotification, StepState } from './model.ts';

export interface MonitoringRepo {
  /** The latest state of the notification's key, locked until the transaction ends. */
  latest(key: Omit<StepNotification, 'code' | 'scheduledTime' | 'at'>): Promise<StepState | null>;
  /** Appends the notification to the history and makes it the key's latest state. */
  record(state: StepState): Promise<void>;
  /** For each product and time: the latest state of every key at its latest product time. */
  summary(filter: StepFilter): Promise<StepState[]>;
  /** Every notification of one step, newest first. */
  history(
    filter: Required<Pick<StepFilter, 'product' | 'time' | 'step' | 'type'>> & Pick<StepFilter, 'status'>,
  ): Promise<StepState[]>;
}
