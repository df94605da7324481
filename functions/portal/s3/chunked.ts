import { createHash } from 'node:crypto';
import { crc32 } from '../../../core/common/crc32.ts';
import { constantTimeEqualText } from '../../../core/common/crypto.ts';
import { bytesToBase64, concatBytes } from '../../../core/common/encoding.ts';
import { chunkSignature, type SignedRequest } from '../../../core/portal/s3-signature.ts';
import { S3Failure } from './errors.ts';

const MAX_LINE = 4096;
const CR = 13;
const LF = 10;

const malformed = () => new S3Failure(400, 'IncompleteBody', 'The aws-chunked body is malformed or ends too early.');

/** How the chunks of an aws-chunked body are signed: in a chain from the request's signature, or not at all. */
export type ChunkSigning = { signed: SignedRequest; key: Uint8Array } | null;

/**
 * The bytes of an `aws-chunked` body: chunks of `<hex size>[;chunk-signature=<signature>]\r\n<bytes>\r\n`
 * up to an empty one, then the trailing headers the request announced (`x-amz-trailer`).
 * STREAMING-AWS4-HMAC-SHA256-PAYLOAD signs each chunk in a chain from the request's signature;
 * STREAMING-UNSIGNED-PAYLOAD-TRAILER (SDKs' default for uploads) signs none and ends with a
 * checksum. A chunk's bytes pass on as they arrive, whatever its size, hashed on the way; its
 * signature is checked at its end, and a wrong one (or checksum) fails the body there, so that the
 * upload taking these bytes discards them before anything is placed.
 */
export async function* awsChunkedBody(
  body: AsyncIterable<Uint8Array>,
  signing: ChunkSigning,
  trailer: string | null,
): AsyncGenerator<Uint8Array> {
  const reader = new ChunkReader(body[Symbol.asyncIterator]());
  const checksum = trailerChecksum(trailer);
  let previous = signing?.signed.signature ?? '';
  for (;;) {
    const match = /^([0-9a-fA-F]{1,16})(?:;chunk-signature=([0-9a-f]{64}))?$/.exec(await reader.line());
    if (match === null || (signing !== null) !== (match[2] !== undefined)) throw malformed();
    const size = Number.parseInt(match[1]!, 16);
    if (!Number.isSafeInteger(size)) throw malformed();
    const hash = signing === null ? null : createHash('sha256');
    for await (const piece of reader.take(size)) {
      hash?.update(piece);
      checksum?.update(piece);
      yield piece;
    }
    if (signing !== null) {
      const expected = await chunkSignature(signing.key, signing.signed, previous, hash!.digest('hex'));
      if (!constantTimeEqualText(expected, match[2]!)) {
        throw new S3Failure(403, 'SignatureDoesNotMatch', 'The signature of a chunk of the body does not match.');
      }
      previous = expected;
    }
    if (size === 0) break;
    if ((await reader.line()) !== '') throw malformed();
  }
  // The trailing headers, up to an empty line (the empty line alone when there are none).
  const trailers = new Map<string, string>();
  for (let text = await reader.line(); text !== ''; text = await reader.line()) {
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
      update: (chunk: Uint8Array) => void (crc = crc32(chunk, crc)),
      digest: () => bytesToBase64(new Uint8Array([crc >>> 24, (crc >>> 16) & 255, (crc >>> 8) & 255, crc & 255])),
    };
  }
  const algorithm = name === 'x-amz-checksum-sha256' ? 'sha256' : name === 'x-amz-checksum-sha1' ? 'sha1' : null;
  if (algorithm === null) return null;
  const hash = createHash(algorithm);
  return { name, update: (chunk: Uint8Array) => void hash.update(chunk), digest: () => hash.digest('base64') };
}

/**
 * The body as lines and runs of bytes. A run is passed on in the pieces it arrived in (views, never
 * copies), so that a chunk costs its size once however large it is; only a line is put together.
 */
class ChunkReader {
  private piece: Uint8Array = new Uint8Array(0);

  constructor(private readonly source: AsyncIterator<Uint8Array>) {}

  /** Bytes are at hand (false: the body has ended). */
  private async fill() {
    while (this.piece.length === 0) {
      const next = await this.source.next();
      if (next.done) return false;
      this.piece = next.value;
    }
    return true;
  }

  /** The next line, without its CRLF; at most MAX_LINE bytes. */
  async line(): Promise<string> {
    const parts: Uint8Array[] = [];
    let length = 0;
    for (;;) {
      if (!(await this.fill())) throw malformed();
      const lf = this.piece.indexOf(LF);
      const end = lf < 0 ? this.piece.length : lf + 1;
      parts.push(this.piece.subarray(0, end));
      length += end;
      this.piece = this.piece.subarray(end);
      if (length > MAX_LINE + 2) throw malformed();
      if (lf >= 0) break;
    }
    const bytes = parts.length === 1 ? parts[0]! : concatBytes(parts);
    if (length < 2 || bytes[length - 2] !== CR) throw malformed();
    return new TextDecoder().decode(bytes.subarray(0, length - 2));
  }

  /** The next `size` bytes, in the pieces they come in. */
  async *take(size: number): AsyncGenerator<Uint8Array> {
    let left = size;
    while (left > 0) {
      if (!(await this.fill())) throw malformed();
      const piece = this.piece.subarray(0, Math.min(left, this.piece.length));
      this.piece = this.piece.subarray(piece.length);
      left -= piece.length;
      yield piece;
    }
  }
}
