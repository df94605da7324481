import type { FailureLog } from '../api-clients/ports.ts';
import { sha256Base64 } from '../common/crypto.ts';
import { retryAfterSeconds, throttled } from '../common/errors.ts';

/**
 * What a visitor may put into a registration, and how often: the verification mail goes to an
 * address nobody has proved to own yet, with the name typed into the form, so the form must not
 * become a way to mail other people text of one's choosing, or to flood a mailbox.
 */

/** How many registrations may be mailed, per client address and per e-mail address, in their windows. */
export interface RegistrationLimits {
  perAddress: number;
  perAddressWindowMs: number;
  perEmail: number;
  perEmailWindowMs: number;
}

/** An office behind one address registers a few people an hour; one mailbox needs a mail or two a day. */
export const REGISTRATION_LIMITS: RegistrationLimits = Object.freeze({
  perAddress: 10,
  perAddressWindowMs: 3600_000,
  perEmail: 3,
  perEmailWindowMs: 24 * 3600_000,
});

export const NAME_EXPECTED =
  'A name of 1 to 200 characters expected (letters, spaces, hyphens, dots, commas), without links';

/** Letters of any script with their marks, digits, spaces and the punctuation of names; nothing else. */
const NAME_CHARACTERS = /^[\p{L}\p{M}\p{N} .,'’()-]+$/u;
/**
 * What a mail reader turns into a link: a host name such as `evil.example` or `www.x` (a letter, a
 * dot, then two letters or more, with no space). `J. R. R. Tolkien` and `J.R.R. Tolkien` are names.
 */
const HOST_NAME = /\p{L}\.\p{L}{2,}/u;

/** The name as the mail will greet it (trimmed), or null when it is no acceptable name. */
export function acceptableName(typed: string): string | null {
  const name = typed.trim().replace(/ {2,}/g, ' ');
  if (name === '' || name.length > 200 || !NAME_CHARACTERS.test(name) || HOST_NAME.test(name)) return null;
  return name;
}

// When the shell cannot tell the address, every visitor would share one count: anyone could then
// stop all registrations. Such registrations are limited per e-mail only.
const UNKNOWN_ADDRESS = 'unknown';

/** The keys of a registration's counts; the e-mail only as a hash (the log is no address book). */
function countsOf(limits: RegistrationLimits, address: string, email: string) {
  const counts = [
    {
      key: `registered-mail:${sha256Base64(email.toLowerCase())}`,
      limit: limits.perEmail,
      windowMs: limits.perEmailWindowMs,
      what: 'this e-mail address',
    },
  ];
  if (address !== '' && address !== UNKNOWN_ADDRESS) {
    counts.push({
      key: `registered-addr:${address}`,
      limit: limits.perAddress,
      windowMs: limits.perAddressWindowMs,
      what: 'your network address',
    });
  }
  return counts;
}

/**
 * Counts a registration about to be mailed, or refuses it (throttled, with the wait) when its
 * e-mail or its client address had its limit of registrations within the window. The registration
 * is counted first and the counts read after, whichever process counts them: of registrations
 * arriving at the same moment around the last free place, some may all be refused, but never one
 * too many passes.
 */
export async function countRegistration(
  log: FailureLog,
  limits: RegistrationLimits,
  registration: { address: string; email: string; now: number },
): Promise<void> {
  const { now } = registration;
  const counts = countsOf(limits, registration.address, registration.email);
  // Already over: refused without being counted, so that a flood does not push the wait further out.
  for (const c of counts) refuseOver(c, await log.recent(c.key, now - c.windowMs, c.limit), now, c.limit);
  for (const c of counts) await log.add(c.key, now, now - c.windowMs, c.limit + 1);
  for (const c of counts) refuseOver(c, await log.recent(c.key, now - c.windowMs, c.limit + 1), now, c.limit + 1);
}

/** Refuses when `times` (oldest first) are `over` or more: the wait is until enough leave the window. */
function refuseOver(count: ReturnType<typeof countsOf>[number], times: readonly number[], now: number, over: number) {
  if (times.length < over) return;
  const waitMs = times[times.length - over]! + count.windowMs - now;
  throw throttled(`Too many registrations from ${count.what}; try again later`, retryAfterSeconds(waitMs));
}
