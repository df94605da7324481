import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incomingUser, putFile } from '../support.ts';
import { call, connect, logsIn, type SftpScene, sftpScene } from './support.ts';

/**
 * Connections not logged in yet are bounded, as OpenSSH's MaxStartups bounds them: one more than
 * allowed, from one address or in all, is closed at once without a word of SSH, while sessions
 * logged in go on; once the idle ones are dropped (their login time is up), new ones get in.
 */
let s: SftpScene;
const LOGIN_TIMEOUT_MS = 3000;

beforeAll(async () => {
  s = await sftpScene({ loginTimeoutMs: LOGIN_TIMEOUT_MS, maxStartups: { total: 3, perAddress: 2 } });
  await s.h.addDestination('DEST');
  await incomingUser(s.h, s.admin, { id: 'reader', password: 'Secret-1' }, ['DEST']);
  await putFile(s.h, s.admin, s.sources, 'DEST', 'a.txt', Buffer.from('hello\n'));
}, 120_000);
afterAll(() => s?.close());

/**
 * A TCP connection from `from` (a loopback address) that sends nothing: whether the server greeted it
 * (its SSH identification), and a promise of its closing with what it had received.
 */
async function idle(from: string) {
  const socket = net.connect({ host: '127.0.0.1', port: s.sftp.port, localAddress: from });
  socket.on('error', () => undefined);
  let received = '';
  socket.setEncoding('latin1').on('data', (text: string) => (received += text));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const greeted = await Promise.race([
    new Promise<boolean>((resolve) => socket.once('data', () => resolve(true))),
    closed.then(() => false),
  ]);
  return { socket, greeted, received: () => received, closed };
}

describe('connections not logged in yet', () => {
  it('are refused at once beyond the bound per address and in all, sessions logged in go on, and room comes back', async () => {
    const session = await connect(s.sftp.port, { username: 'reader', password: 'Secret-1' });
    try {
      const first = await idle('127.0.0.2');
      const second = await idle('127.0.0.2');
      expect([first.greeted, second.greeted]).toEqual([true, true]);
      expect(first.received()).toMatch(/^SSH-2\.0-/);

      const thirdFromThere = await idle('127.0.0.2');
      expect(thirdFromThere.greeted).toBe(false);
      expect(await thirdFromThere.closed).toBe('');

      const elsewhere = await idle('127.0.0.3');
      expect(elsewhere.greeted).toBe(true);
      const overTotal = await idle('127.0.0.4');
      expect(overTotal.greeted).toBe(false);
      expect(await overTotal.closed).toBe('');

      // The session logged in before them is not one of them.
      const names = await call<Array<{ filename: string }>>((done) => session.sftp.readdir('/DEST', done));
      expect(names.map((n) => n.filename)).toEqual(['a.txt']);

      // Their login time is up: the server drops them, and their places are free again.
      await Promise.all([first.closed, second.closed, elsewhere.closed]);
      const again = await idle('127.0.0.2');
      expect(again.greeted).toBe(true);
      again.socket.destroy();
      await again.closed;
      expect(await logsIn(s.sftp.port, { username: 'reader', password: 'Secret-1' })).toBe(true);
    } finally {
      session.client.end();
    }
  });
});
