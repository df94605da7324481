import { invalid } from '../common/errors.ts';

/**
 * Sources that are objects of R2 buckets: `r2://<binding>/<key>`, where `<binding>` names an R2
 * bucket binding of the Worker (one of ECPDS_SOURCE_BUCKETS) and `<key>` is the object's key,
 * everything after the binding's `/`, taken as written: no percent-decoding, since an R2 key may
 * hold `%` itself (a source given in a query string is decoded once, as every parameter is, and
 * no more). `..` is no path step in R2, only two characters of a key.
 */
export interface R2Source {
  binding: string;
  key: string;
}

/** The sources a Worker reads, having no file system: http(s) URLs and R2 objects (matched in SQL too). */
export const WORKER_SOURCE_PATTERN = '^(https?|r2)://';

const WORKER_SOURCE = new RegExp(WORKER_SOURCE_PATTERN, 'i');

export const isWorkerSource = (source: string) => WORKER_SOURCE.test(source);

/** R2 objects, which only a Worker reads (matched in SQL too). */
export const R2_SOURCE_PATTERN = '^r2://';

const R2_SOURCE = new RegExp(R2_SOURCE_PATTERN, 'i');

export const isR2Source = (source: string) => R2_SOURCE.test(source);

/** R2's own limit on a key: 1024 bytes of UTF-8. */
const MAX_KEY_BYTES = 1024;
/** A binding is named as a JavaScript identifier (`env.<binding>`). */
export const isBindingName = (name: string) => /^[A-Za-z_$][\w$]*$/.test(name);
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The source as messages (and logs) show it: control characters as escapes, never as themselves. */
export const shownR2Source = (source: string) =>
  source.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

/** The binding and key of an R2 source, or the reason it is refused; `allowed` lists the allowed bindings. */
export function parseR2Source(raw: string, allowed: readonly string[]): R2Source {
  const shown = shownR2Source(raw);
  const match = /^r2:\/\/([^/]*)\/(.*)$/is.exec(raw);
  if (!match) throw invalid(`Source ${shown} is not a valid R2 source: r2://<binding>/<key> expected`);
  const [, binding = '', key = ''] = match;
  if (!isBindingName(binding)) {
    throw invalid(`Source ${shown} is not a valid R2 source: '${shownR2Source(binding)}' is not a binding name`);
  }
  if (!allowed.includes(binding))
    throw invalid(`Source ${shown} not allowed: ${binding} is not an allowed source bucket`);
  if (key === '') throw invalid(`Source ${shown} is not a valid R2 source: its key is empty`);
  if (key.startsWith('/')) {
    throw invalid(`Source ${shown} is not a valid R2 source: a key without a leading '/' expected`);
  }
  if (CONTROL.test(key)) throw invalid(`Source ${shown} not allowed: its key holds a control character`);
  if (new TextEncoder().encode(key).byteLength > MAX_KEY_BYTES) {
    throw invalid(`Source ${shown} is not a valid R2 source: its key is longer than ${MAX_KEY_BYTES} bytes`);
  }
  return { binding, key };
}

/** Why a runtime without R2 bindings (Node) refuses an R2 source, at registration and when it meets one. */
export const r2SourceOnWorkersOnly = (source: string) =>
  invalid(`Source ${shownR2Source(source)} not allowed: R2 sources are read by Workers only`);
