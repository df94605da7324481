import { constantTimeEqualText } from '../../../core/common/crypto.ts';
import { chunkSignature, type SignedRequest } from '../../../core/portal/s3-signature.ts';
import { S3Failure } from './errors.ts';

const MAX_CHUNK_HEADER = 4096;
const CRLF = '\r\n';

const malformed = () => new S3Failure(400, 'IncompleteBody', 'The aws-chunked body is malformed or ends too early.');

/**
 * The bytes of an `aws-chunked` body (STREAMING-AWS4-HMAC-SHA256-PAYLOAD): chunks of
 * `<hex size>;chunk-signature=<signature>\r\n<bytes>\r\n`, ending with an empty one, each signed
 * in a chain from the request's signature. A chunk whose signature is wrong fails the body.
 */
export async function* awsChunkedBody(
  body: AsyncIterable<Uint8Array>,
  signed: SignedRequest,
  key: Uint8Array,
): AsyncGenerator<Uint8Array> {
  const source = body[Symbol.asyncIterator]();
  let buffer = new Uint8Array(0);
  const more = async () => {
    const next = await source.next();
    if (next.done) return false;
    const joined = new Uint8Array(buffer.length + next.value.length);
    joined.set(buffer, 0);
    joined.set(next.value, buffer.length);
    buffer = joined;
    return true;
  };
  let previous = signed.signature;
  for (;;) {
    let end = lineEnd(buffer);
    while (end < 0) {
      if (buffer.length > MAX_CHUNK_HEADER || !(await more())) throw malformed();
      end = lineEnd(buffer);
    }
    const header = new TextDecoder().decode(buffer.subarray(0, end));
    const match = /^([0-9a-fA-F]{1,16});chunk-signature=([0-9a-f]{64})$/.exec(header);
    if (match === null) throw malformed();
    const size = Number.parseInt(match[1]!, 16);
    buffer = buffer.subarray(end + CRLF.length);
    while (buffer.length < size + CRLF.length) if (!(await more())) throw malformed();
    const chunk = buffer.slice(0, size);
    buffer = buffer.subarray(size + CRLF.length);
    const expected = await chunkSignature(key, signed, previous, chunk);
    if (!constantTimeEqualText(expected, match[2]!)) {
      throw new S3Failure(403, 'SignatureDoesNotMatch', 'The signature of a chunk of the body does not match.');
    }
    previous = expected;
    if (size === 0) return;
    yield chunk;
  }
}

function lineEnd(bytes: Uint8Array) {
  for (let i = 0; i + 1 < bytes.length; i++) if (bytes[i] === 13 && bytes[i + 1] === 10) return i;
  return -1;
}
