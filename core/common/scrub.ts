import { bytesToBase64, utf8 } from './encoding.ts';

/** What a secret is replaced with. */
export const SCRUBBED = '***';

// Shorter secrets are no secrets worth the damage their removal would do to a message.
const MIN_SECRET = 3;
// An encoded form shorter than this matches ordinary words too often.
const MIN_ENCODED = 8;

/**
 * `text` without any of `secrets`, in the forms an upstream server may echo them: as given, as
 * the value of a header line (`Name: value`) and its credentials after a scheme (`Bearer x`),
 * each line of a multi-line secret (a private key), JSON-escaped, URL-encoded, and base64 or
 * base64url, whole or inside a longer encoding (a Basic header's `login:password`) at any offset.
 */
export function scrubSecrets(text: string, secrets: Iterable<string | null | undefined>): string {
  const forms = new Set<string>();
  for (const secret of secrets) if (secret) for (const form of formsOf(secret)) forms.add(form);
  let out = text;
  // Longest first: a short form inside a longer one must not leave the rest of it behind.
  for (const form of [...forms].sort((a, b) => b.length - a.length)) {
    if (out.includes(form)) out = out.split(form).join(SCRUBBED);
  }
  return out;
}

function formsOf(secret: string): string[] {
  const parts = new Set<string>([secret, secret.trim()]);
  const header = /^[!#$%&'*+.^`|~\w-]+:\s*([\s\S]+)$/.exec(secret.trim());
  if (header) {
    parts.add(header[1]!.trim());
    const scheme = /^[\w-]+\s+(\S+)$/.exec(header[1]!.trim());
    if (scheme) parts.add(scheme[1]!);
  }
  for (const line of secret.split(/\r?\n/)) if (line.trim().length >= MIN_ENCODED) parts.add(line.trim());
  const forms: string[] = [];
  for (const part of parts) {
    if (part.length < MIN_SECRET) continue;
    forms.push(part, JSON.stringify(part).slice(1, -1), encodeURIComponent(part));
    for (const encoded of base64Forms(part)) {
      if (encoded.length >= MIN_ENCODED) forms.push(encoded, encoded.replace(/\+/g, '-').replace(/\//g, '_'));
    }
  }
  return forms;
}

/**
 * Base64 of the secret on its own (with and without padding), and the part of its encoding that stays the
 * same wherever it starts inside longer bytes: one for each of the three offsets modulo 3, without
 * the groups it shares with the bytes around it.
 */
function base64Forms(secret: string): string[] {
  const bytes = utf8(secret);
  const whole = bytesToBase64(bytes);
  const forms = [whole, whole.replace(/=+$/, '')];
  for (const shift of [0, 1, 2]) {
    const shifted = new Uint8Array(shift + bytes.length);
    shifted.set(bytes, shift);
    const groups = Math.floor(shifted.length / 3) * 4;
    forms.push(bytesToBase64(shifted).slice(shift === 0 ? 0 : 4, groups));
  }
  return forms;
}
