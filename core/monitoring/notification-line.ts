import { z } from 'zod';
import { int32 } from '../common/int32.ts';
import type { StepNotification } from './model.ts';

const isoTime = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), 'ISO 8601 time expected')
  .transform((s) => new Date(s));

const lineSchema = z.object({
  product: z.string().trim().min(1),
  time: z.string().trim().min(1),
  step: int32(),
  type: z.string().trim().min(1),
  buffer: z.number().int().min(0).default(0),
  code: z
    .string()
    .trim()
    .min(1)
    .transform((c) => c.toUpperCase()),
  productTime: isoTime,
  scheduledTime: isoTime.nullable().optional(),
  at: isoTime.optional(),
});

/** One line of a monitoring import: `{product, time, step, type, buffer?, code, productTime, scheduledTime?, at?}`. */
export function parseNotificationLine(
  line: string,
  now: Date,
): { ok: true; value: StepNotification } | { ok: false; problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { ok: false, problem: 'not valid JSON' };
  }
  const parsed = lineSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, problem: `${issue.path.join('.') || 'line'}: ${issue.message}` };
  }
  const { at, scheduledTime, ...rest } = parsed.data;
  return { ok: true, value: { ...rest, scheduledTime: scheduledTime ?? null, at: at ?? now } };
}
