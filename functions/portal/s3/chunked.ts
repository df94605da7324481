import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { constantTimeEqualText } from '../../../core/common/crypto.ts';
import { chunkSignature, type SignedRequest } from '../../../core/portal/s3-signature.ts';
import { S3Failure } from './errors.ts';

const MAX_LINE = 4096;
const CRLF = 2;

const malformed = () => new S3Failure(400, 'IncompleteBody', 'The aws-chunked body is malformed or ends too early.');

/** How the chunks of an aws-chunked body are signed: in a chain from the request's signature, or not at all. */
export type ChunkSigning = { signed: SignedRequest; key: Uint8Array } | null;

/**
 * The bytes of an `aws-chunked` body: chunks of `<hex size>[;chunk-signature=<signature>]\r\n<bytes>\r\n`
 * up to an empty one, then the trailing headers the request announced (`x-amz-trailer`).
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD signs each chunk in a chain from the request's signature;
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER (SDKs' default for uploads) signs none and ends with a
 * checksum. A wrong chunk signature or checksum fails the body at its end, before anything is placed.
 */
export async function* awsChunkedBody(
  body: AsyncIterable<Uint8Array>,
  signing: ChunkSigning,
  trailer: string | null,
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
  const line = async () => {
    let end = lineEnd(buffer);
    while (end < 0) {
      if (buffer.length > MAX_LINE || !(await more())) throw malformed();
      end = lineEnd(buffer);
    }
    const text = new TextDecoder().decode(buffer.subarray(0, end));
    buffer = buffer.subarray(end + CRLF);
    return text;
  };
  const checksum = trailerChecksum(trailer);
  let previous = signing?.signed.signature ?? '';
  for (;;) {
    const match = /^([0-9a-fA-F]{1,16})(?:;chunk-signature=([0-9a-f]{64}))?$/.exec(await line());
    if (match === null || (signing !== null) !== (match[2] !== undefined)) throw malformed();
    const size = Number.parseInt(match[1]!, 16);
    while (buffer.length < size) if (!(await more())) throw malformed();
    const chunk = buffer.slice(0, size);
    buffer = buffer.subarray(size);
    if (signing !== null) {
      const expected = await chunkSignature(signing.key, signing.signed, previous, chunk);
      if (!constantTimeEqualText(expected, match[2]!)) {
        throw new S3Failure(403, 'SignatureDoesNotMatch', 'The signature of a chunk of the body does not match.');
      }
      previous = expected;
    }
    if (size === 0) break;
    checksum?.update(chunk);
    yield chunk;
    if ((await line()) !== '') throw malformed();
  }
  // The trailing headers, up to an empty line (the empty line alone when there are none).
  const trailers = new Map<string, string>();
  for (let text = await line(); text !== ''; text = await line()) {
    const colon = text.indexOf(':');
    if (colon <= 0) throw malformed();
    trailers.set(text.slice(0, colon).trim().toLowerCase(), text.slice(colon + 1).trim());
  }
  if (checksum !== null) {
    const given = trailers.get(checksum.name);
    if (given === undefined)
      throw new S3Failure(400, 'MalformedTrailerError', `The ${checksum.name} trailer is missing.`);
    if (given !== checksum.digest()) {
      throw new S3Failure(
        400,
        'BadDigest',
        `The ${checksum.name} you specified did not match the calculated checksum.`,
      );
    }
  }
}

/** The checksum a trailer announces, when it is one this server computes (others are taken as they come). */
function trailerChecksum(trailer: string | null) {
  const name = trailer?.trim().toLowerCase() ?? '';
  if (name === 'x-amz-checksum-crc32') {
    let crc = 0;
    return {
      name,
      update: (chunk: Uint8Array) => void (crc = zlib.crc32(chunk, crc)),
      digest: () => Buffer.from([crc >>> 24, (crc >>> 16) & 255, (crc >>> 8) & 255, crc & 255]).toString('base64'),
    };
  }
  const algorithm = name === 'x-amz-checksum-sha256' ? 'sha256' : name === 'x-amz-checksum-sha1' ? 'sha1' : null;
  if (algorithm === null) return null;
  const hash = createHash(algorithm);
  return { name, update: (chunk: Uint8Array) => void hash.update(chunk), digest: () => hash.digest('base64') };
}

function lineEnd(bytes: Uint8Array) {
  for (let i = 0; i + 1 < bytes.length; i++) if (bytes[i] === 13 && bytes[i + 1] === 10) return i;
  return -1;
}
