import { methodOptions } from '../../../core/dissemination/method-options.ts';
import { attemptFence } from '../../../core/dissemination/methods.ts';
import { azureMethod } from '../../../functions/transfer-methods/azure.ts';
import { webdavMethod } from '../../../functions/transfer-methods/webdav.ts';

/** A Worker that sends one generated file with the azure or webdav method, as the POSTed JSON says. */
interface Send {
  method: 'azure' | 'webdav';
  host: string;
  data: string;
  directory: string;
  target: string;
  size: number;
  login: string;
  password: string;
}

async function* filled(size: number) {
  for (let at = 0; at < size; at += 65_536) yield new Uint8Array(Math.min(65_536, size - at)).fill(7);
}

export default {
  async fetch(request: Request) {
    const q = (await request.json()) as Send;
    const host = {
      hostId: 'workerd',
      hostname: q.host.replace(/:\d+$/, ''),
      login: q.login,
      password: q.password,
      directory: q.directory,
      options: methodOptions(q.method, q.host, q.data),
    };
    const method = q.method === 'azure' ? azureMethod() : webdavMethod();
    let confirmed = 0;
    const attempt = attemptFence(7, 1, async () => {
      confirmed++;
    });
    try {
      const file = { target: q.target, size: q.size, attempt };
      const delivered = await method.send(host, file, filled(q.size), new AbortController().signal);
      return Response.json({ ...delivered, confirmed });
    } catch (error) {
      return Response.json({ error: String(error instanceof Error ? error.message : error) });
    }
  },
};
