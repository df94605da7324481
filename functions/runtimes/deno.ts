// Deno entry: `deno run -A functions/runtimes/deno.ts`, or `deno run -A dist/deno.js` once built
// (docs/deploy.md); with --unstable-cron the edge mover runs on Deno.cron, every minute.
import { type Listen, serveStandalone } from './serve.ts';

declare const Deno: {
  env: { toObject(): Record<string, string> };
  serve(
    options: { hostname: string; port: number; cert?: string; key?: string; onListen?(): void },
    handler: (request: Request, info: { remoteAddr: { hostname: string; port: number } }) => Promise<Response>,
  ): { addr: { port: number }; shutdown(): Promise<void> };
  cron?: (name: string, schedule: string, run: () => Promise<void>) => Promise<void>;
};

const listen: Listen = async ({ host, port, tls, fetch }) => {
  const server = Deno.serve({ hostname: host, port, ...tls, onListen() {} }, (request, info) =>
    fetch(request, { address: info.remoteAddr.hostname, port: info.remoteAddr.port }),
  );
  return { port: server.addr.port, stop: () => server.shutdown() };
};

const onCron = (round: () => Promise<void>) => {
  if (typeof Deno.cron !== 'function') return false;
  void Deno.cron('ecpds-edge mover', '* * * * *', round);
  return true;
};

await serveStandalone(Deno.env.toObject(), listen, onCron);
