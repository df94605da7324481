import { sha256 } from '@noble/hashes/sha2.js';
import { base64ToBytes, bytesToBase64 } from '../common/encoding.ts';
import { invalid } from '../common/errors.ts';

/**
 * An incoming user's authorized public keys for the portal's SFTP server: the `<algorithm>
 * <base64> [comment]` line of an OpenSSH `.pub` file, checked (its blob must be a key of that
 * algorithm) and known afterwards by its fingerprint, as `ssh-keygen -l` prints it.
 */
export interface AuthorizedKey {
  algorithm: string;
  /** The key's wire blob, base64 (the second field of the line). */
  blob: string;
  /** `SHA256:` and the unpadded base64 of the blob's SHA-256, as OpenSSH prints it. */
  fingerprint: string;
  comment: string;
  addedAt?: Date;
}

/** The algorithms the SFTP server verifies signatures of. */
export const KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'ssh-rsa',
] as const;

/** Shorter RSA keys are refused: OpenSSH itself no longer accepts them. */
const MIN_RSA_BITS = 2048;
const MAX_LINE = 16 * 1024;

/** The fingerprint of a key blob, as `ssh-keygen -l -E sha256` prints it. */
export const keyFingerprint = (blob: Uint8Array) => `SHA256:${bytesToBase64(sha256(blob)).replace(/=+$/, '')}`;

/** Reads one public key line; an invalid error says what is wrong with it. */
export function parseAuthorizedKey(line: string): AuthorizedKey {
  const text = line.trim();
  if (text === '') throw invalid('An OpenSSH public key line is expected, such as the content of id_ed25519.pub');
  if (text.length > MAX_LINE || /[\r\n]/.test(text)) throw invalid('One public key line is expected');
  const [algorithm = '', encoded = '', ...rest] = text.split(/\s+/);
  if (!(KEY_ALGORITHMS as readonly string[]).includes(algorithm)) {
    throw invalid(
      `Unsupported public key type '${algorithm.slice(0, 40)}' (expected one of ${KEY_ALGORITHMS.join(', ')}; ` +
        'a line with options before the key type is not taken)',
    );
  }
  let blob: Uint8Array;
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new Error('not base64');
    blob = base64ToBytes(encoded);
  } catch {
    throw invalid('The public key is not valid base64');
  }
  const problem = blobProblem(algorithm, blob);
  if (problem !== null) throw invalid(`Invalid ${algorithm} public key: ${problem}`);
  const comment = rest
    .join(' ')
    .replace(/\p{Cc}/gu, '')
    .slice(0, 200);
  return { algorithm, blob: bytesToBase64(blob), fingerprint: keyFingerprint(blob), comment };
}

/** Why the wire blob is not a key of `algorithm`, or null. */
function blobProblem(algorithm: string, blob: Uint8Array): string | null {
  const reader = wireReader(blob);
  const name = reader.text();
  if (name !== algorithm) return `its data is of type '${name ?? '?'}', not ${algorithm}`;
  if (algorithm === 'ssh-ed25519') {
    if (reader.bytes()?.length !== 32) return 'a 32-byte key is expected';
  } else if (algorithm === 'ssh-rsa') {
    const exponent = reader.bytes();
    const modulus = reader.bytes();
    if (!exponent || exponent.length === 0 || !modulus) return 'an exponent and a modulus are expected';
    const bits = bitLength(modulus);
    if (bits < MIN_RSA_BITS) return `${bits} bits is too short (${MIN_RSA_BITS} at least)`;
  } else {
    const curve = reader.text();
    if (`ecdsa-sha2-${curve}` !== algorithm) return `the curve '${curve ?? '?'}' does not match`;
    const point = reader.bytes();
    if (point?.[0] !== 4) return 'an uncompressed curve point is expected';
  }
  return reader.done() ? null : 'unexpected bytes after the key';
}

function bitLength(mpint: Uint8Array) {
  let i = 0;
  while (i < mpint.length && mpint[i] === 0) i++;
  if (i === mpint.length) return 0;
  return (mpint.length - i - 1) * 8 + (32 - Math.clz32(mpint[i]!));
}

/** SSH wire strings (uint32 length, then the bytes), read one after the other. */
function wireReader(data: Uint8Array) {
  let at = 0;
  const bytes = (): Uint8Array | null => {
    if (at + 4 > data.length) return null;
    const length = ((data[at]! << 24) | (data[at + 1]! << 16) | (data[at + 2]! << 8) | data[at + 3]!) >>> 0;
    if (at + 4 + length > data.length) return null;
    const out = data.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    return out;
  };
  return {
    bytes,
    text: () => {
      const b = bytes();
      return b === null ? null : new TextDecoder().decode(b);
    },
    done: () => at === data.length,
  };
}
