// Bun entry: `bun functions/runtimes/bun.ts`, or `bun dist/bun.js` once built (docs/deploy.md).
import { type Listen, serveStandalone } from './serve.ts';

interface BunServer {
  port: number;
  requestIP(request: Request): { address: string; port: number } | null;
  stop(closeActive?: boolean): Promise<void>;
}
declare const Bun: {
  serve(options: {
    hostname: string;
    port: number;
    tls?: { cert: string; key: string };
    fetch(request: Request, server: BunServer): Promise<Response>;
  }): BunServer;
};

const listen: Listen = async ({ host, port, tls, fetch }) => {
  const server = Bun.serve({
    hostname: host,
    port,
    ...(tls && { tls }),
    fetch: (request, self) => fetch(request, self.requestIP(request)),
  });
  return { port: server.port, stop: () => server.stop() };
};

await serveStandalone(process.env, listen);
