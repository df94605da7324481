import { z } from 'zod';
import { int32 } from '../common/int32.ts';
import { DESTINATION_KEYS, type FieldKind, HOST_KEYS } from '../destinations/model.ts';

const kinds = {
  text: z.string().nullable().optional(),
  bool: z.boolean().optional(),
  int: int32().nullable().optional(),
  long: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).nullable().optional(),
};

const fromKeys = <T extends Record<string, FieldKind>>(keys: T) =>
  Object.fromEntries(Object.entries(keys).map(([k, kind]) => [k, kinds[kind]])) as {
    [K in keyof T]: (typeof kinds)[T[K]];
  };

const nonEmpty = z.string().trim().min(1);

const destination = z.object({
  ...fromKeys(DESTINATION_KEYS),
  name: nonEmpty,
  countryIso: z
    .string()
    .regex(/^[A-Za-z]{2}$/)
    .transform((s) => s.toLowerCase()),
  type: int32(),
});

const host = z.object({
  ...fromKeys(HOST_KEYS),
  hostid: z
    .union([
      z.number().int(),
      z
        .string()
        .regex(/^\d{1,15}$/)
        .transform(Number),
    ])
    .nullable()
    .optional(),
});

const ectransModule = z.object({
  name: nonEmpty,
  classe: kinds.text,
  archive: kinds.text,
  active: kinds.bool,
});

/** The restore body: a backup as the GET endpoints produce it (wire-decisions §7). */
export const backupSchema = z.object({
  destinations: z
    .array(
      z.object({
        destination,
        associations: z.array(z.object({ priority: int32().optional(), host })).default([]),
      }),
    )
    .default([]),
  aliases: z.array(z.object({ aliasFrom: nonEmpty, aliasTo: nonEmpty })).default([]),
  methods: z
    .array(
      z.object({
        name: nonEmpty,
        ectransModuleName: kinds.text,
        value: kinds.text,
        restrict: kinds.bool,
        resolve: kinds.bool,
        comment: kinds.text,
        active: kinds.bool,
        ectransModule: ectransModule.nullable().optional(),
      }),
    )
    .default([]),
  ecusers: z
    .array(
      z.object({
        name: nonEmpty,
        uid: kinds.int,
        gid: kinds.int,
        dir: kinds.text,
        shell: kinds.text,
        comment: kinds.text,
      }),
    )
    .default([]),
});

export type Backup = z.output<typeof backupSchema>;

const envelope = z
  .object({ backup: backupSchema, status: z.unknown().optional(), success: z.unknown().optional() })
  .strict();

/** The PUT body `{"backup": {...}}`; the `status`/`success` of a GET answer are ignored. */
export function parseBackupBody(body: unknown): { ok: true; backup: Backup } | { ok: false; problem: string } {
  const parsed = envelope.safeParse(body);
  if (parsed.success) {
    const clash = conflictingHostid(parsed.data.backup);
    if (clash !== null) return { ok: false, problem: `hostid ${clash} is given to different host records` };
    return { ok: true, backup: parsed.data.backup };
  }
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length ? issue.path.join('.') : 'body';
  const what = issue.code === 'unrecognized_keys' ? `unexpected key(s) ${issue.keys.join(', ')}` : issue.message;
  return { ok: false, problem: `${where}: ${what}` };
}

/**
 * The restore maps each original hostid to one new host, so two different records under one hostid
 * would silently lose one of them; identical copies (a host shared by several destinations) are one.
 */
function conflictingHostid(backup: Backup): number | null {
  const seen = new Map<number, string>();
  for (const { associations } of backup.destinations) {
    for (const { host } of associations) {
      if (typeof host.hostid !== 'number') continue;
      const record = canonical(host);
      const earlier = seen.get(host.hostid);
      if (earlier === undefined) seen.set(host.hostid, record);
      else if (earlier !== record) return host.hostid;
    }
  }
  return null;
}

// Key order is not meaning: `{a, b}` and `{b, a}` are the same record.
const canonical = (record: object) =>
  JSON.stringify(
    Object.entries(record)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
