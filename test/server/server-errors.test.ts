import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { logServerErrors } from '../../functions/node/server-errors.ts';

/** A server's error once it listens (an accept failing with EMFILE) is logged; the server goes on. */
describe('server errors after listen', () => {
  it('are logged, and the server still accepts connections', async () => {
    const logged: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const log = (msg: string, fields?: Record<string, unknown>) => logged.push({ msg, fields });
    const server = net.createServer((socket) => socket.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    logServerErrors(server, { info: log, warn: log, error: log }, 'test server error');
    try {
      const emfile = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' });
      expect(() => server.emit('error', emfile)).not.toThrow();
      expect(() => server.emit('error', emfile)).not.toThrow();
      expect(logged).toEqual([
        { msg: 'test server error', fields: { code: 'EMFILE', reason: 'accept EMFILE' } },
        { msg: 'test server error', fields: { code: 'EMFILE', reason: 'accept EMFILE' } },
      ]);
      const { port } = server.address() as net.AddressInfo;
      const greeting = await new Promise<string>((resolve, reject) => {
        let text = '';
        net
          .connect(port, '127.0.0.1')
          .setEncoding('utf8')
          .on('data', (c: string) => (text += c))
          .on('end', () => resolve(text))
          .on('error', reject);
      });
      expect(greeting).toBe('hello');
    } finally {
      server.close();
    }
  });
});
