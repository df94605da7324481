import { describe, expect, it } from 'vitest';
import { SCRUBBED, scrubSecrets } from '../../core/common/scrub.ts';
import { failureMessage, MAX_FAILURE_MESSAGE } from '../../core/dissemination/send.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('scrubbing credentials out of failure messages', () => {
  const password = 'Tr0ub4dor&3-horse';

  it('removes a secret as given, URL-encoded and JSON-escaped', () => {
    const text = `pw=${password} q=${encodeURIComponent(password)} j=${JSON.stringify(`a"${password}`)}`;
    const out = scrubSecrets(text, [password]);
    expect(out).toBe(`pw=${SCRUBBED} q=${SCRUBBED} j="a\\"${SCRUBBED}"`);
    expect(scrubSecrets('a "quoted\\" secret" b', ['quoted" secret'])).toBe(`a "${SCRUBBED}" b`);
  });

  it("removes a Basic header's base64 of login:password, and a password's base64 at any offset", () => {
    const header = `Basic ${b64(`pusher:${password}`)}`;
    expect(scrubSecrets(`echo: ${header}`, [password, `pusher:${password}`])).toBe(`echo: Basic ${SCRUBBED}`);
    const triples = [...password].slice(2).map((_, i) => password.slice(i, i + 3));
    for (const before of ['', 'a', 'ab', 'abc', 'other-user:']) {
      const out = scrubSecrets(b64(`${before}${password}tail`), [password]);
      expect(out).toContain(SCRUBBED);
      // What is left are the groups it shares with the bytes around it: two characters of it at most.
      const left = out.split(SCRUBBED).map((piece) => Buffer.from(piece, 'base64').toString('latin1'));
      for (const piece of left) for (const triple of triples) expect(piece).not.toContain(triple);
    }
    expect(scrubSecrets(`u=${Buffer.from(password).toString('base64url')}`, [password])).toBe(`u=${SCRUBBED}`);
  });

  it("removes a header line's value and its credentials after the scheme", () => {
    const line = 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload';
    expect(scrubSecrets('got Bearer eyJhbGciOiJIUzI1NiJ9.payload', [line])).toBe(`got ${SCRUBBED}`);
    expect(scrubSecrets('token eyJhbGciOiJIUzI1NiJ9.payload!', [line])).toBe(`token ${SCRUBBED}!`);
    expect(scrubSecrets('key was k-123456789', ['X-Api-Key: k-123456789'])).toBe(`key was ${SCRUBBED}`);
  });

  it('removes each line of a private key', () => {
    const key = '-----BEGIN KEY-----\nQUJDREVGR0hJSktMTU5PUA==\n-----END KEY-----';
    expect(scrubSecrets('bad key QUJDREVGR0hJSktMTU5PUA== here', [key])).toBe(`bad key ${SCRUBBED} here`);
  });

  it('leaves short secrets and ordinary text alone', () => {
    expect(scrubSecrets('HTTP 500 Internal Server Error', ['ab', '', null, undefined])).toBe(
      'HTTP 500 Internal Server Error',
    );
  });

  it('makes a failure message from an error: scrubbed, and cut', () => {
    expect(failureMessage(new Error(`login refused: ${password}`), [password])).toBe(`login refused: ${SCRUBBED}`);
    const long = failureMessage(new Error('x'.repeat(5000)), []);
    expect(long).toHaveLength(MAX_FAILURE_MESSAGE);
    expect(long.endsWith('…')).toBe(true);
  });
});
