import fs from 'node:fs';
import type { z } from 'zod';
import { catalogue } from '../../core/catalogue.ts';
import { ApiError, type Client } from '../client/index.ts';
import type { CommandContext } from './cli-io.ts';
import { ConfigError } from './config.ts';
import { expandPatterns } from './glob.ts';
import { connect, describeFailure, type RetryPolicy, remoteSettings, withRetries } from './remote-connection.ts';
import { progressReporter, table, when } from './remote-output.ts';

/**
 * Commands for pipelines that talk to a running server through the typed client:
 * put, size, del, summary, metadata get|put. See `ecpds-edge --help` and docs/pipelines.md.
 * cli-remote.ts declares their options; these are the bodies, loaded once a command runs.
 */

/** The options every remote command takes (cli-remote.ts declares them). */
export interface ConnectionValues {
  url?: string;
  config?: string;
  insecure?: boolean;
  timeout?: string;
  json?: boolean;
  retries?: string;
  retryDelay?: string;
}

function integer(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ConfigError(`--${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return n;
}

/** Checks an option with the catalogue's own schema, so it fails here and not once per file. */
function checked<T>(schema: z.ZodType<T>, raw: string | undefined, what: string): T | undefined {
  if (raw === undefined) return undefined;
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(`${what}: '${raw}' (${result.error.issues[0]?.message ?? 'invalid'})`);
  return result.data;
}

const policyOf = (values: ConnectionValues): RetryPolicy => ({
  retries: integer('retries', values.retries, 4, 0, 20),
  baseDelayMs: integer('retry-delay', values.retryDelay, 500, 0, 60_000),
});

const settingsOf = (ctx: CommandContext, values: ConnectionValues) => {
  const config = values.config === undefined ? undefined : ctx.resolve(values.config);
  return remoteSettings({ ...values, config }, ctx.io.env, (line) => ctx.io.stderr.write(line));
};

/** One call with retries; a failure is printed and makes the exit code 1. */
async function single<T>(
  ctx: CommandContext,
  values: ConnectionValues,
  network: boolean,
  work: (client: Client) => Promise<T>,
  print: (value: T) => void,
) {
  const connection = connect(settingsOf(ctx, values));
  try {
    const attempt = await withRetries(() => work(connection.client), policyOf(values), { network });
    if (attempt.ok) print(attempt.value);
    else {
      ctx.error(describeFailure(attempt.error));
      ctx.exitCode = 1;
    }
  } finally {
    connection.close();
  }
}

export interface PutValues extends ConnectionValues {
  destination?: string;
  uniquename?: string;
  priority?: string;
  lifetime?: string;
  at?: string;
  standby?: boolean;
  force?: boolean;
  concurrency?: string;
}

/** `put --destination D <files or globs>...`: registers each file; exit code = failures (at most 100). */
export async function put(ctx: CommandContext, patterns: string[], values: PutValues) {
  if (!values.destination) throw new ConfigError('put needs --destination <name>');
  if (patterns.length === 0) throw new ConfigError('put needs at least one file or pattern');
  const shape = catalogue.datafilePut.input.shape;
  const common = {
    destination: values.destination,
    uniquename: values.uniquename,
    priority: checked(shape.priority, values.priority, '--priority'),
    lifetime: checked(shape.lifetime, values.lifetime, '--lifetime'),
    at: checked(shape.at, values.at, '--at'),
    standby: values.standby,
    force: values.force,
  };
  const concurrency = integer('concurrency', values.concurrency, 4, 1, 64);
  const policy = policyOf(values);
  const settings = settingsOf(ctx, values);

  const { files, problems } = expandPatterns(patterns, ctx.io.cwd);
  const report = progressReporter(ctx.io, values.json === true, files.length + problems.length);
  for (const p of problems) report.failed(p.pattern, null, p.reason, 0);
  const connection = connect(settings);
  try {
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const source = files[next++]!;
        const attempt = await withRetries(() => connection.client.datafilePut({ ...common, source }), policy, {
          network: true,
        });
        if (attempt.ok) {
          report.ok(source, attempt.value.id, attempt.attempts);
          continue;
        }
        const e = attempt.error;
        // A retry after a lost answer can meet the transfer its first attempt registered.
        const again = e instanceof ApiError && attempt.attempts > 1 && e.message.startsWith('DataFile already exists');
        const note = again ? ' (an earlier attempt may have registered it)' : '';
        const status = e instanceof ApiError ? e.status : null;
        const message = e instanceof ApiError ? e.message : describeFailure(e);
        report.failed(source, status, `${message}${note}`, attempt.attempts);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  } finally {
    connection.close();
  }
  ctx.exitCode = Math.min(report.finish(values.destination), 100);
}

function idArgument(command: string, raw: string | undefined) {
  const id = checked(catalogue.datafileSize.input.shape.id, raw, `${command} <id>`);
  if (id === undefined) throw new ConfigError(`${command} needs a data file <id>`);
  return id;
}

export async function size(ctx: CommandContext, raw: string | undefined, values: ConnectionValues) {
  const id = idArgument('size', raw);
  await single(
    ctx,
    values,
    true,
    (c) => c.datafileSize({ id }),
    (r) => ctx.out(values.json ? JSON.stringify({ id, size: r.size }) : String(r.size)),
  );
}

export async function del(ctx: CommandContext, raw: string | undefined, values: ConnectionValues) {
  const id = idArgument('del', raw);
  // Not repeated after a lost answer: a second delete would report "Already deleted".
  await single(
    ctx,
    values,
    false,
    (c) => c.datafileDel({ id }),
    () => ctx.out(values.json ? JSON.stringify({ id, deleted: true }) : `DataFile ${id} deleted.`),
  );
}

export interface SummaryValues extends ConnectionValues {
  step?: string;
  type?: string;
  status?: string;
}

const SUMMARY_HEAD = [
  'PRODUCT',
  'TIME',
  'STEP',
  'TYPE',
  'STATUS',
  'CODE',
  'LEVEL',
  'SCHEDULED (UTC)',
  'ARRIVAL (UTC)',
  'MIN BEFORE',
];

/** `summary [product [time]]`: the step status table. */
export async function summary(
  ctx: CommandContext,
  product: string | undefined,
  time: string | undefined,
  values: SummaryValues,
) {
  const step = checked(catalogue.monitoringSummary.input.shape.step, values.step, '--step');
  const filters = { step, type: values.type, status: values.status };
  await single(
    ctx,
    values,
    true,
    (c) =>
      time !== undefined && product !== undefined
        ? c.monitoringSummaryCycle({ product, time, ...filters })
        : product !== undefined
          ? c.monitoringSummaryProduct({ product, ...filters })
          : c.monitoringSummary(filters),
    ({ stepStatusList: list }) => {
      if (values.json) return ctx.out(JSON.stringify(list));
      if (list.length === 0) return ctx.out('No step status.');
      ctx.out(
        table([
          SUMMARY_HEAD,
          ...list.map((e) => [
            e.product,
            e.time,
            String(e.step),
            e.type,
            e.status,
            e.statusCode,
            String(e.statusLevel),
            when(e.scheduledTime),
            when(e.arrivalTime),
            e.minutesBeforeSchedule === null ? '-' : String(e.minutesBeforeSchedule),
          ]),
        ]),
      );
    },
  );
}

/** `metadata get <destination> [file]`: stdout when no file or `-`. */
export async function metadataGet(
  ctx: CommandContext,
  name: string,
  file: string | undefined,
  values: ConnectionValues,
) {
  await single(
    ctx,
    values,
    true,
    (c) => c.metadataGet({ name }),
    (r) => {
      const text = `${JSON.stringify(r, null, 2)}\n`;
      if (file === undefined || file === '-') ctx.io.stdout.write(text);
      else fs.writeFileSync(ctx.resolve(file), text);
    },
  );
}

/** `metadata put <destination> [file]`: stdin when no file or `-`. */
export async function metadataPut(
  ctx: CommandContext,
  name: string,
  file: string | undefined,
  values: ConnectionValues,
) {
  const fromStdin = file === undefined || file === '-';
  let body: unknown;
  try {
    body = JSON.parse(fromStdin ? await ctx.readStdin() : fs.readFileSync(ctx.resolve(file), 'utf8'));
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new ConfigError(`cannot read ${fromStdin ? 'standard input' : file}: ${reason}`);
  }
  // A full replace: sending it again after a lost answer stores the same values.
  await single(
    ctx,
    values,
    true,
    (c) => c.metadataPut({ name, body: body as never }),
    (r) => ctx.out(values.json ? JSON.stringify(r) : `Destination ${r.destination}: ${r.count} value(s) stored.`),
  );
}
