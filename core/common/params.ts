import { z } from 'zod';
import { badRequest, missingParameter } from './errors.ts';

/**
 * Parameter types of the catalogue. Query values arrive as strings; the message of each
 * refinement is the "what was expected" part of the 400 text (wire-decisions §1, §3).
 */
export const param = {
  text: () => z.string(),
  /**
   * A decimal integer; with a range, the bounds are checks of the number itself, so that the
   * OpenAPI document reads them from here as `minimum` and `maximum`.
   */
  int: (range?: { min: number; max: number }) => {
    const number = z.int({ error: 'integer expected' });
    const expected = range && `integer from ${range.min} to ${range.max} expected`;
    return z
      .string()
      .regex(/^[+-]?\d+$/, 'integer expected')
      .transform(Number)
      .pipe(range ? number.min(range.min, expected).max(range.max, expected) : number);
  },
  bool: () =>
    z
      .string()
      .regex(/^(true|false)$/i, 'true or false expected')
      .transform((s) => s.toLowerCase() === 'true'),
  oneOf: <const T extends readonly [string, ...string[]]>(values: T) =>
    z.enum(values, { error: `one of ${values.join(', ')} expected` }),
  matching: (pattern: RegExp, expectation: string) => z.string().regex(pattern, expectation),
};

export const ISO_CODE = param
  .matching(/^[A-Za-z]{2}$/, 'two-letter ISO country code expected')
  .transform((s) => s.toLowerCase());
export const EMAIL = param.matching(/^[^\s@]+@[^\s@]+$/, 'e-mail address expected');

export type InputSchema = z.ZodObject<Record<string, z.ZodType>>;

const isBlank = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

interface Field {
  name: string;
  schema: z.ZodType;
  /** Whether the schema accepts no value: asked once per schema, not on every request. */
  optional: boolean;
}

const fieldsOfSchema = new WeakMap<InputSchema, readonly Field[]>();

function fieldsOf(schema: InputSchema): readonly Field[] {
  let fields = fieldsOfSchema.get(schema);
  if (!fields) {
    fields = Object.entries(schema.shape).map(([name, field]) => ({
      name,
      schema: field,
      optional: field.safeParse(undefined).success,
    }));
    fieldsOfSchema.set(schema, fields);
  }
  return fields;
}

/**
 * Checks raw input against a catalogue schema in the order the wire requires: every
 * required parameter first (412), then the type of each value given (400).
 */
export function parseInput<S extends InputSchema>(schema: S, raw: Record<string, unknown>): z.output<S> {
  const fields = fieldsOf(schema);
  for (const field of fields) {
    if (!field.optional && isBlank(raw[field.name])) throw missingParameter(field.name);
  }
  const out: Record<string, unknown> = {};
  for (const { name, schema: fieldSchema } of fields) {
    const value = raw[name];
    if (isBlank(value)) continue;
    // No database text can hold NUL: refuse it here rather than fail in storage.
    if (typeof value === 'string' && value.includes('\u0000')) {
      throw badRequest(`Invalid value for parameter ${name}: text without NUL characters expected`);
    }
    const result = fieldSchema.safeParse(value);
    if (!result.success) throw badRequest(describeIssue(name, value, result.error));
    out[name] = result.data;
  }
  return out as z.output<S>;
}

function describeIssue(name: string, value: unknown, error: z.ZodError): string {
  const expected = error.issues[0]?.message ?? 'invalid value';
  if (name === 'body') return `Invalid request body: ${expected}`;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  // One line, bounded: the value is echoed back and must not break the plain-text body.
  const shown = text.length > 80 ? `${text.slice(0, 80)}...` : text;
  return `Invalid value for parameter ${name}: '${shown.replace(/[\u0000-\u001f\u007f]/g, '?')}' (${expected})`;
}
