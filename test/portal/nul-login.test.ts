import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../support/harness.ts';
import { Agent, incomingUser } from './agent.ts';
import { call, connect, logsIn, type SftpScene, sftpScene } from './sftp/support.ts';

/**
 * A login holding U+0000, which no database text can hold, is a wrong login like any other, on
 * every protocol: the same answer as a wrong password, counted by the failed-authentication rules,
 * never an internal error.
 */
let s: SftpScene;
const NUL_LOGIN = 're\u0000ader';
/** What the rules count for it (the login as storable text, in lower case). */
const COUNTED = 'portal:user:re\ufffdader';
const counted = async () => (await s.h.ports.repos.console.signInFailures.recent(COUNTED, 0, 100)).length;
const errorsLogged = () => s.h.logLines.filter((l) => JSON.parse(l).level === 'error');

beforeAll(async () => {
  s = await sftpScene();
  await s.h.addDestination('NUL');
  await incomingUser(s.h, s.admin, {
    id: 'reader',
    mode: 'standard-login',
    password: 'reader-Pass-1',
    destination: 'NUL',
  });
});
afterAll(() => s?.close());

describe('a login with a NUL character', () => {
  it('over HTTPS (Basic and the form) is refused as a wrong password is, and counted', async () => {
    const wrong = await s.h.call('GET', '/portal/data/', { auth: basic('reader', 'not-the-password') });
    const nul = await s.h.call('GET', '/portal/data/', { auth: basic(NUL_LOGIN, 'reader-Pass-1') });
    expect([nul.status, nul.text]).toEqual([wrong.status, wrong.text]);
    expect(nul.status).toBe(401);
    const page = await new Agent(s.h.app).submit('/portal/login', '/portal/login', {
      login: NUL_LOGIN,
      password: 'x',
    });
    expect([page.status, /role="alert">([^<]*)</.exec(page.text)?.[1]]).toEqual([401, 'Login failed']);
    expect(await counted()).toBe(2);
    expect(s.h.events.at(-1)).toMatch(/^DEA;/);
    // An open-access visit naming such a user is refused as one naming no user.
    const home = await s.h.call('GET', '/portal/home/re%00ader/');
    expect(home.status).toBe((await s.h.call('GET', '/portal/home/nobody/')).status);
    expect(home.status).toBeLessThan(500);
    expect(errorsLogged()).toEqual([]);
  });

  it('over SFTP is refused, counted, and leaves the server serving', async () => {
    const before = await counted();
    expect(await logsIn(s.sftp.port, { username: NUL_LOGIN, password: 'reader-Pass-1' })).toBe(false);
    expect(await counted()).toBeGreaterThan(before);
    expect(await logsIn(s.sftp.port, { username: 'reader', password: 'reader-Pass-1' })).toBe(true);
    expect(errorsLogged()).toEqual([]);
  });

  it('in an SFTP path is no such file, and the session goes on', async () => {
    const { client, sftp } = await connect(s.sftp.port, { username: 'reader', password: 'reader-Pass-1' });
    try {
      for (const path of ['/NUL/a\u0000b', '/N\u0000UL']) {
        const error = await call((done) => sftp.stat(path, done)).then(
          () => null,
          (e: { code?: number }) => e,
        );
        expect(error?.code, path).toBe(2);
      }
      expect((await call<unknown[]>((done) => sftp.readdir('/', done))).length).toBeGreaterThan(0);
    } finally {
      client.end();
    }
    expect(errorsLogged()).toEqual([]);
  });

  it('in a path is an invalid path, not an internal error', async () => {
    const auth = basic('reader', 'reader-Pass-1');
    for (const path of ['/portal/data/NUL/a%00b', '/portal/data/N%00UL/', '/portal/data/NUL/%FF']) {
      expect((await s.h.call('GET', path, { auth })).status, path).toBe(400);
    }
  });
});
