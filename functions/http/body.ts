import { concatBytes, strictUtf8 } from '../../core/common/encoding.ts';
import { badRequest, ServiceError } from '../../core/common/errors.ts';

const tooLarge = (limit: number) => new ServiceError('tooLarge', `Request body larger than ${limit} bytes`);

/** Reads the body as text, refusing more than `limit` bytes without buffering them. */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > limit) throw tooLarge(limit);
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const text = strictUtf8(concatBytes(chunks));
  if (text === null) throw badRequest('Invalid request body: UTF-8 text expected');
  return text;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  // No database text can hold NUL, raw or escaped: refuse the body rather than fail in storage.
  if (text.includes('\u0000') || /\\u0000/.test(text))
    throw badRequest('Invalid JSON body: NUL characters are not allowed');
  try {
    return JSON.parse(text);
  } catch (e) {
    // The parser's message quotes part of the body: kept to one line of printable text.
    const reason = e instanceof Error ? e.message.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, '?') : 'unreadable';
    throw badRequest(`Invalid JSON body: ${reason}`);
  }
}

export function parseFormBody(request: Request, text: string): Record<string, string> {
  if (text === '') return {};
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== '' && type !== 'application/x-www-form-urlencoded') {
    throw badRequest('Invalid request body: form fields (application/x-www-form-urlencoded) expected');
  }
  const fields: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(text)) if (!(key in fields)) fields[key] = value;
  return fields;
}
