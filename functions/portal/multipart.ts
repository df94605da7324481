import { badRequest } from '../../core/common/errors.ts';

/**
 * A streaming reader of `multipart/form-data` (RFC 7578) for the portal's upload form: a file part
 * goes to disk as it arrives, never held whole in memory. Each part's body must be read (or left:
 * it is skipped) before the next part is asked for.
 */
export interface FormPart {
  name: string;
  /** The file name the browser gave, without any directory; null for a plain field. */
  filename: string | null;
  body: AsyncIterable<Uint8Array>;
}

const MAX_HEADER_BYTES = 16 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The boundary of a `multipart/form-data` content type, or null when it is not one. */
export function formBoundary(contentType: string | undefined): string | null {
  const [type, ...params] = (contentType ?? '').split(';').map((p) => p.trim());
  if (type?.toLowerCase() !== 'multipart/form-data') return null;
  for (const param of params) {
    const match = /^boundary\s*=\s*(?:"([^"]{1,70})"|([^\s"]{1,70}))$/i.exec(param);
    if (match) return match[1] ?? match[2]!;
  }
  return null;
}

export async function* formParts(body: ReadableStream<Uint8Array>, boundary: string): AsyncGenerator<FormPart> {
  const reader = body.getReader();
  let buffer: Uint8Array = new Uint8Array(0);
  const more = async () => {
    const { done, value } = await reader.read();
    if (done) return false;
    buffer = buffer.length === 0 ? value : concat(buffer, value);
    return true;
  };
  const need = async (bytes: number) => {
    while (buffer.length < bytes) if (!(await more())) throw malformed('it ends too early');
  };
  try {
    const first = encoder.encode(`--${boundary}`);
    for (;;) {
      const at = indexOf(buffer, first, 0);
      if (at >= 0) {
        buffer = buffer.subarray(at + first.length);
        break;
      }
      if (buffer.length > MAX_HEADER_BYTES || !(await more())) throw malformed('no boundary');
    }
    const delimiter = encoder.encode(`\r\n--${boundary}`);
    for (;;) {
      // After a boundary: `--` ends the body, a line break starts a part.
      await need(2);
      if (buffer[0] === 45 && buffer[1] === 45) return;
      const headersEnd = await (async () => {
        for (;;) {
          const end = indexOf(buffer, CRLFCRLF, 0);
          if (end >= 0) return end;
          if (buffer.length > MAX_HEADER_BYTES || !(await more())) throw malformed('a part without its headers');
        }
      })();
      const headers = decoder.decode(buffer.subarray(0, headersEnd));
      buffer = buffer.subarray(headersEnd + CRLFCRLF.length);
      const disposition = /^content-disposition:\s*form-data(.*)$/im.exec(headers)?.[1] ?? '';
      const name = parameter(disposition, 'name');
      if (name === null) throw malformed('a part without a name');
      const filename = parameter(disposition, 'filename');
      let finished = false;
      async function* partBody(): AsyncGenerator<Uint8Array> {
        for (;;) {
          const at = indexOf(buffer, delimiter, 0);
          if (at >= 0) {
            if (at > 0) yield buffer.slice(0, at);
            buffer = buffer.subarray(at + delimiter.length);
            finished = true;
            return;
          }
          // All but what could be the start of the delimiter is the part's.
          const keep = delimiter.length - 1;
          if (buffer.length > keep) {
            const out = buffer.slice(0, buffer.length - keep);
            buffer = buffer.subarray(buffer.length - keep);
            yield out;
          }
          if (!(await more())) throw malformed('it ends inside a part');
        }
      }
      const part = partBody();
      yield { name, filename: filename === null ? null : baseName(filename), body: part };
      if (!finished) for await (const _ of part);
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

const CRLFCRLF = encoder.encode('\r\n\r\n');
const malformed = (why: string) => badRequest(`Invalid multipart/form-data body: ${why}`);

/** A `name="value"` parameter of a Content-Disposition (quoted, with `\"` escapes, or a bare token). */
function parameter(disposition: string, name: string): string | null {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]+))`, 'i').exec(disposition);
  if (!match) return null;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2]!;
}

/** Some browsers send the whole local path: only its last part names the file. */
const baseName = (filename: string) =>
  filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);

function concat(a: Uint8Array, b: Uint8Array) {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number) {
  const first = needle[0];
  const last = haystack.length - needle.length;
  outer: for (let i = haystack.indexOf(first!, from); i !== -1 && i <= last; i = haystack.indexOf(first!, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
