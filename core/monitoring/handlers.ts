import { prsEvent } from '../common/events.ts';
import type { Args, Handlers } from '../common/operation.ts';
import type { Ctx, Ports } from '../ports.ts';
import { rejection, type StepFilter, type StepNotification, type StepState, stepEntry } from './model.ts';
import type { monitoringOperations } from './operations.ts';

export type IngestOutcome = { result: 'accepted' } | { result: 'ignored' | 'refused'; reason: string };

/**
 * Applies the reference server's ingestion rules. A dropped notification is not stored; it
 * writes a PRS event entry carrying the reason.
 */
export async function ingest(ports: Ports, n: StepNotification): Promise<IngestOutcome> {
  const outcome = await ports.repos.transaction(
    async (repos): Promise<IngestOutcome & { latest?: StepState | null }> => {
      const latest = await repos.monitoring.latest(n);
      const reason = rejection(n, latest);
      if (reason) return { result: reason === 'not found' ? 'refused' : 'ignored', reason, latest };
      await repos.monitoring.record({
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
      return { result: 'accepted' };
    },
  );
  if (outcome.result !== 'accepted') {
    ports.events.write(
      prsEvent({
        at: ports.clock(),
        code: n.code,
        product: n.product,
        step: n.step,
        productTime: n.productTime,
        type: n.type,
        scheduledTime: n.scheduledTime ?? outcome.latest?.scheduledTime ?? null,
        lastUpdate: outcome.latest?.lastUpdate ?? null,
        error: `${n.product}/${n.time}/${n.step}/${n.type}: ${outcome.reason}`,
      }),
    );
    return { result: outcome.result, reason: outcome.reason };
  }
  return { result: 'accepted' };
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
