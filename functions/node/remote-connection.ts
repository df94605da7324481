import fs from 'node:fs';
import https from 'node:https';
import { ApiError, type Client, createClient } from '../client/index.ts';
import { ConfigError } from './config.ts';

/**
 * How the remote commands reach a server: URL and credentials from `--config <file.json>`,
 * else the environment (ECPDS_URL, ECPDS_USERNAME, ECPDS_SECRET); never from the command
 * line, where other users of the machine could read them.
 */
export interface RemoteSettings {
  url: string;
  username: string;
  secret: string;
  insecure: boolean;
  timeoutMs: number;
}

export interface ConnectionFlags {
  url?: string;
  config?: string;
  insecure?: boolean;
  timeout?: string;
}

export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  config: { type: 'string' },
  insecure: { type: 'boolean' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  retries: { type: 'string' },
  'retry-delay': { type: 'string' },
} as const;

const CREDENTIAL_FLAG = /^--(secret|password|pass|username|user)(=|$)/;

/** Refuses credentials given as arguments before anything else reads them. */
export function refuseCredentialFlags(args: string[]) {
  if (args.some((a) => CREDENTIAL_FLAG.test(a))) {
    throw new ConfigError(
      'credentials are never taken from the command line: ' +
        'set ECPDS_USERNAME and ECPDS_SECRET, or give --config <file.json>',
    );
  }
}

function readConfigFile(file: string, warn: (line: string) => void): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ConfigError(`cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(`${file}: a JSON object {"url", "username", "secret"} expected`);
  if (process.platform !== 'win32' && (fs.statSync(file).mode & 0o077) !== 0) {
    warn(`ecpds-edge: warning: ${file} holds a secret and can be read by other users (chmod 600 ${file})\n`);
  }
  return parsed as Record<string, unknown>;
}

const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const truthy = (v: unknown) => v === true || (typeof v === 'string' && /^(1|true|yes|on)$/i.test(v));

export function remoteSettings(
  flags: ConnectionFlags,
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
): RemoteSettings {
  const file = flags.config ? readConfigFile(flags.config, warn) : {};
  const url = flags.url ?? text(file.url) ?? text(env.ECPDS_URL);
  const username = text(file.username) ?? text(env.ECPDS_USERNAME);
  const secret = text(file.secret) ?? text(env.ECPDS_SECRET);
  if (!url) throw new ConfigError('no server: give --url, set ECPDS_URL, or put "url" in the --config file');
  if (!/^https?:\/\//i.test(url)) throw new ConfigError(`--url must start with https:// (or http://), got '${url}'`);
  if (!username || !secret)
    throw new ConfigError(
      'no credentials: set ECPDS_USERNAME and ECPDS_SECRET, or put "username" and "secret" in the --config file',
    );
  const timeout = flags.timeout === undefined ? 60 : Number(flags.timeout);
  if (!Number.isFinite(timeout) || timeout <= 0)
    throw new ConfigError(`--timeout must be a number of seconds, got '${flags.timeout}'`);
  return {
    url,
    username,
    secret,
    insecure: Boolean(flags.insecure) || truthy(file.insecure) || truthy(env.ECPDS_INSECURE),
    timeoutMs: timeout * 1000,
  };
}

type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/** fetch over node:https that accepts any certificate (`--insecure`, a self-signed server). */
function insecureFetch(agent: https.Agent): Fetch {
  return (input, init) => {
    const url = new URL(input);
    if (url.protocol !== 'https:') return fetch(input, init);
    return new Promise<Response>((resolve, reject) => {
      const request = https.request(
        url,
        {
          method: init.method ?? 'GET',
          headers: Object.fromEntries(new Headers(init.headers)),
          agent,
          signal: init.signal ?? undefined,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })));
          res.on('end', () => {
            const headers = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value])
                headers.append(name, v);
            }
            const status = res.statusCode ?? 502;
            const empty = status === 204 || status === 304 || init.method === 'HEAD';
            resolve(
              new Response(empty ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage, headers }),
            );
          });
        },
      );
      request.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })));
      if (typeof init.body === 'string') request.write(init.body);
      request.end();
    });
  };
}

export interface Connection {
  client: Client;
  settings: RemoteSettings;
  close(): void;
}

export function connect(settings: RemoteSettings): Connection {
  const agent = settings.insecure ? new https.Agent({ rejectUnauthorized: false, keepAlive: true }) : null;
  const base: Fetch = agent ? insecureFetch(agent) : (input, init) => fetch(input, init);
  const send: Fetch = (input, init) => base(input, { ...init, signal: AbortSignal.timeout(settings.timeoutMs) });
  const client = createClient({
    baseUrl: settings.url,
    username: settings.username,
    secret: settings.secret,
    fetch: send,
  });
  return { client, settings, close: () => agent?.destroy() };
}

const causeCode = (e: unknown): string => {
  for (let c: unknown = e, depth = 0; c && depth < 5; depth++) {
    const code = (c as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    c = (c as { cause?: unknown }).cause;
  }
  return '';
};

const isCertificateProblem = (e: unknown) => /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(causeCode(e));

/** One line for a failure: the server's status and message, or what went wrong on the way. */
export function describeFailure(e: unknown): string {
  if (e instanceof ApiError) return `HTTP ${e.status}: ${e.message}`;
  if (isCertificateProblem(e))
    return `certificate not trusted (${causeCode(e)}); --insecure accepts a self-signed certificate`;
  if (e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError'))
    return 'no answer in time (--timeout)';
  const cause = e instanceof Error && e.cause instanceof Error ? e.cause.message : '';
  return `network error: ${cause || (e instanceof Error ? e.message : String(e))}`;
}

export interface RetryPolicy {
  retries: number;
  baseDelayMs: number;
}

/** Whether another attempt may succeed: 503, 429, and (for idempotent calls) network failures. */
function retryable(e: unknown, network: boolean): boolean {
  if (e instanceof ApiError) return e.status === 503 || e.status === 429;
  if (isCertificateProblem(e)) return false;
  return network;
}

export type Attempt<T> = { ok: true; value: T; attempts: number } | { ok: false; error: unknown; attempts: number };

export async function withRetries<T>(
  work: () => Promise<T>,
  policy: RetryPolicy,
  options: { network: boolean },
): Promise<Attempt<T>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: true, value: await work(), attempts: attempt };
    } catch (error) {
      if (attempt > policy.retries || !retryable(error, options.network))
        return { ok: false, error, attempts: attempt };
      const backoff = Math.min(policy.baseDelayMs * 2 ** (attempt - 1), 30_000) * (0.5 + Math.random() / 2);
      const asked =
        error instanceof ApiError && error.retryAfterSeconds !== null
          ? Math.min(error.retryAfterSeconds, 60) * 1000
          : 0;
      await new Promise((resolve) => setTimeout(resolve, Math.max(backoff, asked)));
    }
  }
}
