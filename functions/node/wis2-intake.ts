import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import type { VerifiedCopies, Wis2Intake } from '../../core/acquisition/wis2-intake.ts';
import { downloadLink } from './wis2-download.ts';
import { wnmSchemaCheck } from './wis2-schema.ts';

/** The largest inflated `properties.content`: a message carries at most a few KiB of it. */
const MOST_INFLATED_BYTES = 16 * 1024 * 1024;

/** A WIS2 subscription's runtime on Node: the WNM schema, Node's hashes and gunzip, and the checked downloads. */
export function nodeWis2Intake(): Wis2Intake {
  // Compiled at the first message: a mover without subscriptions never pays for it.
  let check: ((message: unknown) => string | null) | null = null;
  return {
    schemaErrors: (message) => {
      check ??= wnmSchemaCheck();
      return check(message);
    },
    decode: {
      base64: (text) => new Uint8Array(Buffer.from(text, 'base64')),
      gunzip: (bytes) => new Uint8Array(zlib.gunzipSync(bytes, { maxOutputLength: MOST_INFLATED_BYTES })),
    },
    download: downloadLink,
    digest: (method, bytes) => createHash(method).update(bytes).digest('base64'),
    verified: verifiedCopies(),
  };
}

/** Kept until taken, for a few minutes at most, and never more than `mostBytes` in all (the oldest go first). */
export function verifiedCopies(mostBytes = 256 * 1024 * 1024, keptMs = 10 * 60_000): VerifiedCopies {
  const kept = new Map<string, { bytes: Uint8Array; until: number }>();
  let total = 0;
  const drop = (key: string) => {
    const entry = kept.get(key);
    if (!entry) return;
    kept.delete(key);
    total -= entry.bytes.length;
  };
  return {
    keep(hostId, href, bytes) {
      const key = `${hostId} ${href}`;
      drop(key);
      const now = Date.now();
      for (const [k, entry] of kept) if (entry.until < now || total + bytes.length > mostBytes) drop(k);
      if (bytes.length > mostBytes) return;
      kept.set(key, { bytes, until: now + keptMs });
      total += bytes.length;
    },
    take(hostId, href) {
      const key = `${hostId} ${href}`;
      const entry = kept.get(key);
      drop(key);
      return entry && entry.until >= Date.now() ? entry.bytes : null;
    },
  };
}
