import { methodOptions } from '../../../core/dissemination/method-options.ts';
import { httpMethod } from '../../../functions/transfer-methods/http.ts';
import { s3Method } from '../../../functions/transfer-methods/s3.ts';

/** A Worker that sends one generated file with the s3 or http method, as the POSTed JSON says. */
interface Send {
  method: 's3' | 'http';
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
    const method = q.method === 's3' ? s3Method() : httpMethod();
    try {
      const file = { target: q.target, size: q.size };
      return Response.json(await method.send(host, file, filled(q.size), new AbortController().signal));
    } catch (error) {
      return Response.json({ error: String(error instanceof Error ? error.message : error) });
    }
  },
};
