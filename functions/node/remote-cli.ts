import fs from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { z } from 'zod';
import { catalogue } from '../../core/catalogue.ts';
import { ApiError, type Client } from '../client/index.ts';
import { ConfigError } from './config.ts';
import { expandPatterns } from './glob.ts';
import { progressReporter, table, when } from './remote-output.ts';
import { CONNECTION_OPTIONS, connect, describeFailure, refuseCredentialFlags, remoteSettings, withRetries, type RetryPolicy } from './remote-connection.ts';

/**
 * Commands for pipelines that talk to a running server through the typed client:
 * put, size, del, summary, metadata get|put. See `ecpds-edge help` and the README.
 */
type Options = NonNullable<ParseArgsConfig['options']>;

function parse<O extends Options>(args: string[], options: O) {
  refuseCredentialFlags(args);
  try {
    return parseArgs({ args, allowPositionals: true, strict: true, options: { ...CONNECTION_OPTIONS, ...options } });
  } catch (e) {
    throw new ConfigError(e instanceof Error ? e.message : String(e));
  }
}

function integer(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`--${flag} must be an integer from ${min} to ${max}, got '${raw}'`);
  return n;
}

/** Checks an option with the catalogue's own schema, so it fails here and not once per file. */
function checked<T>(schema: z.ZodType<T>, raw: string | undefined, what: string): T | undefined {
  if (raw === undefined) return undefined;
  const result = schema.safeParse(raw);
  if (!result.success) throw new ConfigError(`${what}: '${raw}' (${result.error.issues[0]?.message ?? 'invalid'})`);
  return result.data;
}

const policyOf = (values: { retries?: string; 'retry-delay'?: string }): RetryPolicy => ({
  retries: integer('retries', values.retries, 4, 0, 20),
  baseDelayMs: integer('retry-delay', values['retry-delay'], 500, 0, 60_000),
});

const out = (line: string) => process.stdout.write(`${line}\n`);

/** One call with retries; a failure is printed and makes the exit code 1. */
async function single<T>(values: Parameters<typeof remoteSettings>[0] & Parameters<typeof policyOf>[0], network: boolean, work: (client: Client) => Promise<T>, print: (value: T) => void) {
  const connection = connect(remoteSettings(values, process.env));
  try {
    const attempt = await withRetries(() => work(connection.client), policyOf(values), { network });
    if (attempt.ok) print(attempt.value);
    else {
      process.stderr.write(`ecpds-edge: ${describeFailure(attempt.error)}\n`);
      process.exitCode = 1;
    }
  } finally {
    connection.close();
  }
}

/** `put --destination D <files or globs>...`: registers each file; exit code = failures (at most 100). */
export async function put(args: string[]) {
  const { values, positionals } = parse(args, {
    destination: { type: 'string' }, uniquename: { type: 'string' }, priority: { type: 'string' }, lifetime: { type: 'string' },
    at: { type: 'string' }, standby: { type: 'boolean' }, force: { type: 'boolean' }, concurrency: { type: 'string' },
  });
  if (!values.destination) throw new ConfigError('put needs --destination <name>');
  if (positionals.length === 0) throw new ConfigError('put needs at least one file or pattern');
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
  const settings = remoteSettings(values, process.env);

  const { files, problems } = expandPatterns(positionals);
  const report = progressReporter(values.json === true, files.length + problems.length);
  for (const p of problems) report.failed(p.pattern, null, p.reason, 0);
  const connection = connect(settings);
  try {
    let next = 0;
    const worker = async () => {
      while (next < files.length) {
        const source = files[next++]!;
        const attempt = await withRetries(() => connection.client.datafilePut({ ...common, source }), policy, { network: true });
        if (attempt.ok) {
          report.ok(source, attempt.value.id, attempt.attempts);
          continue;
        }
        const e = attempt.error;
        // A retry after a lost answer can meet the transfer its first attempt registered.
        const note = e instanceof ApiError && attempt.attempts > 1 && e.message.startsWith('DataFile already exists') ? ' (an earlier attempt may have registered it)' : '';
        report.failed(source, e instanceof ApiError ? e.status : null, `${e instanceof ApiError ? e.message : describeFailure(e)}${note}`, attempt.attempts);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));
  } finally {
    connection.close();
  }
  process.exitCode = Math.min(report.finish(values.destination), 100);
}

function idArgument(command: string, positionals: string[]) {
  const id = checked(catalogue.datafileSize.input.shape.id, positionals[0], `${command} <id>`);
  if (id === undefined) throw new ConfigError(`${command} needs a data file <id>`);
  return id;
}

export async function size(args: string[]) {
  const { values, positionals } = parse(args, {});
  const id = idArgument('size', positionals);
  await single(values, true, (c) => c.datafileSize({ id }), (r) => out(values.json ? JSON.stringify({ id, size: r.size }) : String(r.size)));
}

export async function del(args: string[]) {
  const { values, positionals } = parse(args, {});
  const id = idArgument('del', positionals);
  // Not repeated after a lost answer: a second delete would report "Already deleted".
  await single(values, false, (c) => c.datafileDel({ id }), () => out(values.json ? JSON.stringify({ id, deleted: true }) : `DataFile ${id} deleted.`));
}

/** `summary [product [time]]`: the step status table. */
export async function summary(args: string[]) {
  const { values, positionals } = parse(args, { step: { type: 'string' }, type: { type: 'string' }, status: { type: 'string' } });
  const [product, time] = positionals;
  const filters = { step: checked(catalogue.monitoringSummary.input.shape.step, values.step, '--step'), type: values.type, status: values.status };
  await single(
    values,
    true,
    (c) => (time !== undefined && product !== undefined
      ? c.monitoringSummaryCycle({ product, time, ...filters })
      : product !== undefined ? c.monitoringSummaryProduct({ product, ...filters }) : c.monitoringSummary(filters)),
    ({ stepStatusList: list }) => {
      if (values.json) return out(JSON.stringify(list));
      if (list.length === 0) return out('No step status.');
      const head = ['PRODUCT', 'TIME', 'STEP', 'TYPE', 'STATUS', 'CODE', 'LEVEL', 'SCHEDULED (UTC)', 'ARRIVAL (UTC)', 'MIN BEFORE'];
      out(table([head, ...list.map((e) => [
        e.product, e.time, String(e.step), e.type, e.status, e.statusCode, String(e.statusLevel),
        when(e.scheduledTime), when(e.arrivalTime), e.minutesBeforeSchedule === null ? '-' : String(e.minutesBeforeSchedule),
      ])]));
    },
  );
}

/** `metadata get <destination> [file]` and `metadata put <destination> [file]` (stdin when no file or `-`). */
export async function metadata(args: string[]) {
  const { values, positionals } = parse(args, {});
  const [action, name, file] = positionals;
  if ((action !== 'get' && action !== 'put') || !name) throw new ConfigError('usage: ecpds-edge metadata get|put <destination> [file]');
  const toStdio = file === undefined || file === '-';
  if (action === 'get') {
    return single(values, true, (c) => c.metadataGet({ name }), (r) => {
      const text = `${JSON.stringify(r, null, 2)}\n`;
      if (toStdio) process.stdout.write(text);
      else fs.writeFileSync(file, text);
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(fs.readFileSync(toStdio ? 0 : file, 'utf8'));
  } catch (e) {
    throw new ConfigError(`cannot read ${toStdio ? 'standard input' : file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  // A full replace: sending it again after a lost answer stores the same values.
  await single(values, true, (c) => c.metadataPut({ name, body: body as never }), (r) => out(values.json ? JSON.stringify(r) : `Destination ${r.destination}: ${r.count} value(s) stored.`));
}
