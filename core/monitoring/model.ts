/** A step key's latest state, or one history notification: the same shape feeds both. */
export interface StepState {
  product: string;
  time: string;
  productTime: Date;
  buffer: number;
  step: number;
  type: string;
  code: string;
  scheduledTime: Date | null;
  lastUpdate: Date;
}

export interface StepFilter {
  product?: string;
  time?: string;
  step?: number;
  type?: string;
  status?: string;
}

const DISPLAY: Record<string, string> = { INIT: 'Expected', EXEC: 'Started', DONE: 'Completed' };

const seconds = (d: Date | null) => (d === null ? null : Math.floor(d.getTime() / 1000));

/** The entry of wire-decisions §9, computed at `now`. */
export function stepEntry(s: StepState, now: Date) {
  const arrival = s.code === 'DONE' ? s.lastUpdate : null;
  // + 0: no -0
  const minutesBeforeSchedule =
    s.scheduledTime === null ? null : Math.trunc((s.scheduledTime.getTime() - (arrival ?? now).getTime()) / 60_000) + 0;
  return {
    product: s.product,
    time: s.time,
    buffer: s.buffer,
    step: s.step,
    type: s.type,
    status: DISPLAY[s.code] ?? s.code,
    statusCode: s.code,
    statusLevel: statusLevel(minutesBeforeSchedule, s.buffer, s.code),
    arrivalTime: seconds(arrival),
    scheduledTime: seconds(s.scheduledTime),
    lastUpdate: seconds(s.lastUpdate),
    productTime: seconds(s.productTime),
    minutesBeforeSchedule,
  };
}

export function statusLevel(minutesBeforeSchedule: number | null, bufferMs: number, code: string): number {
  if (minutesBeforeSchedule === null) return -1;
  const m = minutesBeforeSchedule + bufferMs / 60_000;
  if (m >= 30) return 1;
  if (m >= 15) return 2;
  if (m >= 0) return 3;
  if (m < -60 && code === 'INIT') return 5;
  return 4;
}

export interface StepNotification {
  product: string;
  time: string;
  step: number;
  type: string;
  buffer: number;
  code: string;
  productTime: Date;
  scheduledTime: Date | null;
  at: Date;
}

/** What identifies a step's state: the primary key of its latest state. */
export type StepKey = Pick<StepNotification, 'product' | 'time' | 'productTime' | 'buffer' | 'step' | 'type'>;

/** One string per key: the key of maps and, hashed, of the advisory lock serializing the key's notifications. */
export const stepKeyOf = (k: StepKey) =>
  JSON.stringify([k.product, k.time, k.productTime.toISOString(), k.buffer, k.step, k.type]);

/** Why the reference server drops a notification, or null when it is accepted. */
export function rejection(n: StepNotification, latest: StepState | null): string | null {
  if (!latest && n.scheduledTime === null) return 'not found';
  if (n.code === 'INIT' && latest && latest.scheduledTime?.getTime() === n.scheduledTime?.getTime())
    return 'already expected';
  if (n.code === 'EXEC' && latest?.code !== 'INIT') return 'not expected';
  if (n.code === 'DONE' && latest?.code === 'DONE') return 'already completed';
  return null;
}
