import {
  type AnswerOf,
  catalogue,
  type DocumentedBodyId,
  type DocumentedBodyOf,
  type InputOf,
  type OperationId,
  type SuccessEnvelopeId,
} from '../../core/catalogue.ts';
import { bytesToBase64, utf8 } from '../../core/common/encoding.ts';
import { inFormBody, type Operation } from '../../core/common/operation.ts';

/**
 * A typed client of the API, built from the same catalogue as the server: one method per
 * operation, named as its catalogue key. It needs nothing but `fetch`, so it runs on Node,
 * Workers and in browsers alike.
 */
export type Envelope<K extends OperationId> = K extends SuccessEnvelopeId ? { success: 'yes' } : { status: 'ok' };
export type Result<K extends OperationId> = Envelope<K> & AnswerOf<K>;

/** The catalogue's input types; the two JSON bodies the catalogue leaves open get their documented type. */
export type Input<K extends OperationId> = K extends DocumentedBodyId
  ? Omit<InputOf<K>, 'body'> & { body: DocumentedBodyOf<K> }
  : InputOf<K>;
type Args<K extends OperationId> = {} extends Input<K> ? [input?: Input<K>] : [input: Input<K>];

export type Client = { readonly [K in OperationId]: (...args: Args<K>) => Promise<Result<K>> };

export interface ClientOptions {
  /** Where the server answers, e.g. `https://ecpds.example.org:8443` (a trailing `/v1` is ignored). */
  baseUrl: string;
  username?: string;
  secret?: string;
  /** Defaults to the global fetch. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Sent with every request (a proxy header, a fixed request id). */
  headers?: Record<string, string>;
}

/** Any answer other than a success: the HTTP status and the server's message (plain text or JSON `message`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly operation: OperationId,
    readonly requestId: string | null,
    /** From `Retry-After` (429), when the server sent it. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

const onWire = (value: unknown) =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : JSON.stringify(value);

/** The URL and request of one call: path values in the path, the rest in the query or the form. */
function requestOf(op: Operation, input: Record<string, unknown>): { path: string; init: RequestInit } {
  const inPath = new Set<string>();
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    inPath.add(name);
    return encodeURIComponent(input[name] === undefined ? '' : onWire(input[name]));
  });
  const fields = new URLSearchParams();
  const form = new URLSearchParams();
  for (const name of Object.keys(op.input.shape)) {
    const value = input[name];
    if (name === 'body' || inPath.has(name) || value === undefined || value === null) continue;
    (inFormBody(op, name) ? form : fields).append(name, onWire(value));
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  let body: string | undefined;
  if (op.body === 'form') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = form.toString();
  } else if (op.body === 'json' && input.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(input.body);
  }
  const query = fields.toString();
  return { path: query ? `${path}?${query}` : path, init: { method: op.method, headers, body } };
}

async function answerOf(id: OperationId, res: Response): Promise<unknown> {
  const text = await res.text();
  const requestId = res.headers.get('x-request-id');
  if (res.ok) {
    try {
      return JSON.parse(text);
    } catch {
      throw new ApiError(res.status, `Answer is not JSON: ${text.slice(0, 200)}`, id, requestId);
    }
  }
  let message = text.trim() || res.statusText || `HTTP ${res.status}`;
  try {
    const json = JSON.parse(text) as { message?: unknown };
    if (typeof json?.message === 'string') message = json.message;
  } catch {
    // plain-text answers (400, 401, 403, 412, 413) are the message themselves
  }
  const retryAfter = Number(res.headers.get('retry-after'));
  throw new ApiError(
    res.status,
    message,
    id,
    requestId,
    Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
  );
}

export function createClient(options: ClientOptions): Client {
  const base = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  // Called through a wrapper: Workers refuse a fetch detached from the global object.
  const send = options.fetch ?? ((input: string, init: RequestInit) => fetch(input, init));
  const authorization =
    options.username === undefined
      ? null
      : `Basic ${bytesToBase64(utf8(`${options.username}:${options.secret ?? ''}`))}`;

  const call = async (id: OperationId, input: Record<string, unknown> = {}) => {
    const op: Operation = catalogue[id];
    const { path, init } = requestOf(op, input);
    const headers = {
      ...options.headers,
      ...(init.headers as Record<string, string>),
      ...(authorization && op.access !== 'none' && { authorization }),
    };
    return answerOf(id, await send(`${base}${path}`, { ...init, headers }));
  };
  const methods = Object.fromEntries(
    (Object.keys(catalogue) as OperationId[]).map((id) => [id, (input?: Record<string, unknown>) => call(id, input)]),
  );
  return Object.freeze(methods) as unknown as Client;
}
