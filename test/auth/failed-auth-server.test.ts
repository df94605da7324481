import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Answer, failedAuthScenarios } from '../support/failed-auth-scenarios.ts';
import { basic, freePort, killAll, removeTempDirs, startServer, tempDir } from '../support/processes.ts';

// `ecpds-edge serve` with its production rules and real delays, each caller on a loopback address
// of its own (127.0.0.0/8 all reaches the server), so the address counted is the socket's peer.
const SCENARIOS = ['nineteen', 'twenty', 'neighbour', 'spread', 'shared-host'];
const secretOf = (username: string) => `${username}-S3cret-9`;
let url: string;
let addresses = 0;

beforeAll(async () => {
  const dir = tempDir();
  const properties = path.join(dir, 'ecpds.properties');
  fs.writeFileSync(
    properties,
    ['[API]', ...SCENARIOS.map((s) => `node-${s}=${secretOf(`node-${s}`)}:incoming.*`)].join('\n'),
  );
  const server = startServer({
    PORT: String(await freePort()),
    ECPDS_DATA_DIR: path.join(dir, 'data'),
    ECPDS_PROPERTIES: properties,
  });
  url = await server.ready;
});
afterAll(async () => {
  await killAll();
  removeTempDirs();
});

function list(auth: string, localAddress: string): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    const r = https.request(
      new URL('/v1/incoming/user/list', url),
      { headers: { authorization: auth }, localAddress, rejectUnauthorized: false, agent: false },
      (res) => {
        res.resume().on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] }));
      },
    );
    r.on('error', reject);
    r.end();
  });
}

failedAuthScenarios('API on a Node server', () => ({
  account: async (scenario) => ({ username: `node-${scenario}`, secret: secretOf(`node-${scenario}`) }),
  freshAddress: () => `127.0.${Math.floor(++addresses / 250) + 10}.${(addresses % 250) + 2}`,
  async attempt(username, secret, address): Promise<Answer> {
    const r = await list(basic(username, secret), address);
    if (r.status === 429) return { outcome: 'throttled', retryAfter: Number(r.retryAfter) };
    if (r.status === 500) return { outcome: 'wrong' };
    if (r.status === 200) return { outcome: 'in' };
    throw new Error(`unexpected status ${r.status}`);
  },
}));
