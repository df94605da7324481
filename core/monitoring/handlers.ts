import { prsEvent } from '../common/events.ts';
import type { Args, Handlers } from '../common/operation.ts';
import type { Ctx, Ports } from '../ports.ts';
import {
  rejection,
  type StepFilter,
  type StepKey,
  type StepNotification,
  type StepState,
  stepEntry,
  stepKeyOf,
} from './model.ts';
import type { monitoringOperations } from './operations.ts';

export type IngestOutcome = { result: 'accepted' } | { result: 'ignored' | 'refused'; reason: string };

type Dropped = { result: 'ignored' | 'refused'; reason: string; latest: StepState | null };

const droppedAs = (reason: string, latest: StepState | null): Dropped => ({
  result: reason === 'not found' ? 'refused' : 'ignored',
  reason,
  latest,
});

/** The state an accepted notification leaves: a notification without a schedule keeps the one in force. */
const stateAfter = (n: StepNotification, latest: StepState | null): StepState => ({
  product: n.product,
  time: n.time,
  productTime: n.productTime,
  buffer: n.buffer,
  step: n.step,
  type: n.type,
  code: n.code,
  scheduledTime: n.scheduledTime ?? latest?.scheduledTime ?? null,
  lastUpdate: n.at,
});

function writeDropped(ports: Ports, n: StepNotification, { reason, latest }: Dropped) {
  ports.events.write(
    prsEvent({
      at: ports.clock(),
      code: n.code,
      product: n.product,
      step: n.step,
      productTime: n.productTime,
      type: n.type,
      scheduledTime: n.scheduledTime ?? latest?.scheduledTime ?? null,
      lastUpdate: latest?.lastUpdate ?? null,
      error: `${n.product}/${n.time}/${n.step}/${n.type}: ${reason}`,
    }),
  );
}

const outcomeOf = (o: Dropped | { result: 'accepted' }): IngestOutcome =>
  o.result === 'accepted' ? { result: 'accepted' } : { result: o.result, reason: o.reason };

/**
 * Applies the reference server's ingestion rules. A dropped notification is not stored; it
 * writes a PRS event entry carrying the reason.
 */
export async function ingest(ports: Ports, n: StepNotification): Promise<IngestOutcome> {
  const outcome = await ports.repos.transaction(async (repos): Promise<Dropped | { result: 'accepted' }> => {
    const latest = await repos.monitoring.latest(n);
    const reason = rejection(n, latest);
    if (reason) return droppedAs(reason, latest);
    await repos.monitoring.record(stateAfter(n, latest));
    return { result: 'accepted' };
  });
  if (outcome.result !== 'accepted') writeDropped(ports, n, outcome);
  return outcomeOf(outcome);
}

/**
 * `ingest` of each notification in order, in one transaction of a few statements: the latest
 * states of the keys are read (and locked) at once, the rules applied in memory key by key in
 * the notifications' order, and what was accepted written together. The outcomes, stored rows
 * and PRS entries are those of `ingest` called on each in turn.
 */
export async function ingestAll(ports: Ports, notifications: StepNotification[]): Promise<IngestOutcome[]> {
  const outcomes = await ports.repos.transaction(async (repos) => {
    const names = notifications.map(stepKeyOf);
    const keys = new Map<string, StepKey>();
    for (const [i, n] of notifications.entries()) keys.set(names[i]!, n);
    const latest = await repos.monitoring.latestOf([...keys.values()]);
    const accepted: StepState[] = [];
    const outcomes = notifications.map((n, i): Dropped | { result: 'accepted' } => {
      const key = names[i]!;
      const before = latest.get(key) ?? null;
      const reason = rejection(n, before);
      if (reason) return droppedAs(reason, before);
      const state = stateAfter(n, before);
      latest.set(key, state);
      accepted.push(state);
      return { result: 'accepted' };
    });
    await repos.monitoring.recordAll(accepted);
    return outcomes;
  });
  return outcomes.map((o, i) => {
    if (o.result !== 'accepted') writeDropped(ports, notifications[i]!, o);
    return outcomeOf(o);
  });
}

async function summaryOf(ctx: Ctx, filter: StepFilter) {
  const now = ctx.ports.clock();
  return { stepStatusList: (await ctx.ports.repos.monitoring.summary(filter)).map((s) => stepEntry(s, now)) };
}

export const summary = ({ ctx, input }: Args<'monitoringSummary'>) => summaryOf(ctx, input);
export const summaryProduct = ({ ctx, input }: Args<'monitoringSummaryProduct'>) => summaryOf(ctx, input);
export const summaryCycle = ({ ctx, input }: Args<'monitoringSummaryCycle'>) => summaryOf(ctx, input);

export async function history({ ctx, input }: Args<'monitoringHistory'>) {
  const now = ctx.ports.clock();
  return { stepStatusHistoryList: (await ctx.ports.repos.monitoring.history(input)).map((s) => stepEntry(s, now)) };
}

export const monitoringHandlers = {
  monitoringSummary: summary,
  monitoringSummaryProduct: summaryProduct,
  monitoringSummaryCycle: summaryCycle,
  monitoringHistory: history,
} satisfies Handlers<typeof monitoringOperations>;
