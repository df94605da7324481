import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { showTransfer } from '../../core/dissemination/transfers.ts';
import { dataTransfers, destinationState } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import type { TestHost } from '../support/backups.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * Servers that echo the credentials they were sent in their error answers: what the mover keeps
 * of such an answer (history, the transfer's message, the ring's last error, the ERR line, logs)
 * says what failed and holds none of them.
 */
const mark = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}-Wq3`;
const LOGIN = 'pusher';
const PASSWORD = mark('http-password');
const API_KEY = mark('api-key');
const S3_SECRET = mark('s3-secret');
const b64 = (text: string) => Buffer.from(text).toString('base64');
/** Every form of the credentials that must never be kept. */
const CREDENTIALS = [PASSWORD, API_KEY, S3_SECRET, b64(`${LOGIN}:${PASSWORD}`), b64(PASSWORD), b64(S3_SECRET)];

interface EchoServer {
  port: number;
  /** The bodies of the error answers sent: they did hold the credentials. */
  answered: string[];
  stop(): Promise<void>;
}

async function startServer(handle: (req: http.IncomingMessage) => { status: number; body: string }) {
  const answered: string[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, body } = handle(req);
      if (status >= 400) answered.push(body);
      res.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    answered,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  } satisfies EchoServer;
}

let h: Harness;
let admin: string;
let sources: string;
let mover: Mover;
let web: EchoServer;
let s3: EchoServer;

beforeAll(async () => {
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-scrub-src-')));
  fs.writeFileSync(path.join(sources, 'fc.grib'), 'GRIB payload');
  h = await createHarness({ sourceRoots: [sources] });
  admin = await h.client('admin', ['.*']);
  // Under /ok/ the right credentials get 201; anything else is a 500 that echoes what came.
  web = await startServer((req) => {
    const auth = req.headers.authorization;
    const key = req.headers['x-api-key'];
    const right = auth === `Basic ${b64(`${LOGIN}:${PASSWORD}`)}` && key === API_KEY;
    if (req.url?.startsWith('/ok/') && right) return { status: 201, body: '' };
    const body = `Denied. Authorization: ${auth}; X-Api-Key: ${key}; expected password ${PASSWORD} (${b64(PASSWORD)})`;
    return { status: 500, body };
  });
  // An S3 error document whose Message echoes the secret, followed by the request it signed.
  s3 = await startServer(() => ({
    status: 403,
    body:
      '<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code>' +
      `<Message>Signed with ${S3_SECRET} (${b64(S3_SECRET)}) ${'and so on '.repeat(50)}</Message>` +
      `<StringToSign>AWS4-HMAC-SHA256 ${S3_SECRET}</StringToSign></Error>`,
  }));
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [] }),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    { name: 'scrub', concurrency: 4, leaseMs: 5000, heartbeatMs: 500, pollMs: 40 },
  );
});
afterAll(async () => {
  await mover?.stop(5000);
  await web?.stop();
  await s3?.stop();
  await h.close();
  fs.rmSync(sources, { recursive: true, force: true });
});

/** Restores and starts a destination, sets its host's options through the API, and puts one file. */
async function putThrough(destination: string, host: TestHost, options: Record<string, string> = {}) {
  // One try per hour: the test looks at the first failure only.
  await restoreDestination(h, admin, destination, [{ ...host, retryCount: 1, retryFrequency: 3_600_000 }]);
  const backup = await h.call('GET', `/v1/destination/backup/${destination}`, { auth: admin });
  const hostid = backup.json.backup.destinations[0].associations[0].host.hostid;
  for (const [name, value] of Object.entries(options)) {
    const r = await h.call('POST', `/v1/host/option?hostid=${hostid}&name=${name}`, { auth: admin, form: { value } });
    expect(r.status).toBe(200);
  }
  const q = new URLSearchParams({ destination, source: path.join(sources, 'fc.grib') });
  const put = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(put.status, put.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, put.json.id));
  return t!.id;
}

/** What the first failed attempt left: its history comment, the transfer's message, the ring's last error. */
async function firstFailure(id: number) {
  const stop = await eventually(
    async () => (await showTransfer(h.ports, id)).history.find((r) => r.status === 'STOP'),
    20_000,
    'a failed attempt',
  );
  const transfer = await showTransfer(h.ports, id);
  const [state] = await h.db
    .select()
    .from(destinationState)
    .where(eq(destinationState.destination, transfer.destination));
  return { comment: stop.comment ?? '', message: transfer.message ?? '', lastError: state?.lastError ?? '' };
}

const kept = () => [...h.events, ...h.logLines];

describe('credentials echoed by a failing server', () => {
  const webHost = (dir: string): TestHost => ({
    method: 'http',
    host: `127.0.0.1:${web.port}`,
    login: LOGIN,
    passwd: PASSWORD,
    dir,
  });

  it('the mover sends the sealed options unsealed: the right credentials are delivered', async () => {
    const id = await putThrough('SCRUB_HTTP_OK', webHost('ok'), { 'http.authheader': `X-Api-Key: ${API_KEY}` });
    await eventually(async () => ((await showTransfer(h.ports, id)).status === 'DONE' ? true : undefined));
  });

  it('an HTTP 500 echoing the Authorization header, the API key and the password keeps none of them', async () => {
    const id = await putThrough('SCRUB_HTTP_500', webHost('fail'), { 'http.authheader': `X-Api-Key: ${API_KEY}` });
    const failure = await firstFailure(id);
    // The server did answer with them.
    const echoed = web.answered.at(-1)!;
    for (const form of [PASSWORD, API_KEY, b64(`${LOGIN}:${PASSWORD}`), b64(PASSWORD)]) {
      expect(echoed).toContain(form);
    }
    expect(failure.comment).toMatch(/^HTTP PUT http:\/\/127\.0\.0\.1:\d+\/fail\/fc\.grib failed: 500 Internal Server/);
    // The header line is the secret option's value: all of it goes.
    expect(failure.comment).toContain('Denied. Authorization: Basic ***; ***; expected password *** (***)');
    for (const text of [failure.comment, failure.message, failure.lastError]) {
      expect(text).toContain('failed: 500');
      for (const credential of CREDENTIALS) expect(text).not.toContain(credential);
    }
    const err = h.events.find((e) => e.startsWith('ERR;') && e.includes(`DataTransferId=${id};`));
    expect(err).toContain('Message=HTTP PUT');
    for (const line of kept()) for (const credential of CREDENTIALS) expect(line).not.toContain(credential);
  });

  it("an S3 error keeps its Code and a short Message, without the secret key or the request's echo", async () => {
    const id = await putThrough('SCRUB_S3_403', {
      method: 's3',
      host: `127.0.0.1:${s3.port}`,
      login: 'AKIDEXAMPLE',
      passwd: S3_SECRET,
      dir: 'drop',
      data: `s3.bucketName = "bucket"\ns3.url = "http://127.0.0.1:${s3.port}"\ns3.enablePathStyleAccess = "yes"`,
    });
    const failure = await firstFailure(id);
    expect(s3.answered.at(-1)).toContain(S3_SECRET);
    expect(failure.comment).toMatch(
      /^S3 PUT bucket\/drop\/fc\.grib failed: 403 SignatureDoesNotMatch Signed with \*\*\* \(\*\*\*\) and so on/,
    );
    // The reason is cut to 200 characters; the StringToSign is never read.
    expect(failure.comment.length).toBeLessThan(280);
    expect(failure.comment).not.toContain('AWS4-HMAC-SHA256');
    for (const text of [failure.comment, failure.message, failure.lastError]) {
      for (const credential of CREDENTIALS) expect(text).not.toContain(credential);
    }
    for (const line of kept()) for (const credential of CREDENTIALS) expect(line).not.toContain(credential);
  });
});
