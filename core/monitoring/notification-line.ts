import { z } from 'zod';
import { int32, isInt32 } from '../common/int32.ts';
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
  const plain = plainLine(json, now);
  return plain ? { ok: true, value: plain } : checkedLine(json, now);
}

/** The schema's answer, with the schema's problem for a line it refuses. */
export function checkedLine(
  json: unknown,
  now: Date,
): { ok: true; value: StepNotification } | { ok: false; problem: string } {
  const parsed = lineSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { ok: false, problem: `${issue.path.join('.') || 'line'}: ${issue.message}` };
  }
  const { at, scheduledTime, ...rest } = parsed.data;
  return { ok: true, value: { ...rest, scheduledTime: scheduledTime ?? null, at: at ?? now } };
}

const text = (v: unknown) => (typeof v === 'string' ? v.trim() : '');
const stamp = (v: unknown) => (typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? new Date(v) : null);

/**
 * What the schema makes of a line it accepts, checked by hand: the schema costs a large imports'
 * parsing several times over. Null for anything else, which the schema then refuses with its problem.
 */
export function plainLine(json: unknown, now: Date): StepNotification | null {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  const o = json as Record<string, unknown>;
  const [product, time, type, code] = [text(o.product), text(o.time), text(o.type), text(o.code)];
  if (product === '' || time === '' || type === '' || code === '') return null;
  const { step, buffer = 0 } = o;
  if (typeof step !== 'number' || !isInt32(step)) return null;
  if (typeof buffer !== 'number' || !Number.isSafeInteger(buffer) || buffer < 0) return null;
  const productTime = stamp(o.productTime);
  const scheduledTime = o.scheduledTime === undefined || o.scheduledTime === null ? null : stamp(o.scheduledTime);
  const at = o.at === undefined ? now : stamp(o.at);
  if (productTime === null || at === null || (scheduledTime === null && o.scheduledTime != null)) return null;
  return { product, time, step, type, buffer, code: code.toUpperCase(), productTime, scheduledTime, at };
}
