import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as apiClients from '../../core/api-clients/clients.ts';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { Ports } from '../../core/ports.ts';
import type { CallContext } from '../../functions/fetch-shell.ts';
import { lambdaHandlers } from '../../functions/runtimes/lambda.ts';
import { sqsQueue } from '../../functions/runtimes/sqs-queue.ts';
import { destinationBackup } from '../support/backups.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { removeTempDirs, tempDir } from '../support/processes.ts';
import { type HttpSink, startHttpSink } from '../support/servers/http-sink.ts';
import { checkSignature } from '../support/servers/sigv4.ts';
import {
  type Answer,
  apiSlice,
  basic,
  blob,
  normalised,
  runtimeDatabase,
  type Send,
  startBlobSource,
} from './support.ts';

/**
 * The AWS Lambda entry driven as Lambda drives it: API Gateway events into `handler`, EventBridge into
 * `scheduled`, SQS batches into `deliveries`; its answers compared with the Node app's for the same requests.
 */

const DOMAIN = 'edgeapi.execute-api.eu-west-1.amazonaws.com';
const ADDRESS = '198.51.100.7';
const ELSEWHERE = '203.0.113.9';
const SQS_KEY = { id: 'AKIDRUNTIMETEST', secret: 'runtime-test-secret-key' };
const REGION = 'eu-west-1';

let source: Awaited<ReturnType<typeof startBlobSource>>;
let database: Awaited<ReturnType<typeof runtimeDatabase>>;
let dataDir: string;
let baseEnv: Record<string, string>;
let handlers: ReturnType<typeof lambdaHandlers>;
/** Whether the handlers' database may still be open (the last test closes it itself). */
let handlersOpen = false;
let node: Harness;

beforeAll(async () => {
  source = await startBlobSource();
  recorder = await startSqsRecorder();
  database = await runtimeDatabase();
  dataDir = path.join(tempDir('ecpds-lambda-'), 'data');
  baseEnv = {
    ECPDS_DATA_DIR: dataDir,
    ECPDS_SOURCE_HOSTS: source.host,
    ECPDS_EDGE_ALLOW_PRIVATE: '1',
    ...database.env,
  };
  handlers = lambdaHandlers({ ...baseEnv, ...sqsEnv() });
  handlersOpen = true;
  node = await createHarness({ sourceHosts: [source.host] });
});

afterAll(async () => {
  if (handlersOpen) await (await handlers.standalone()).close();
  await node?.close();
  await database?.close();
  await source?.stop();
  await recorder?.stop();
  removeTempDirs();
});

/** Work handed over by a call, awaited before the test goes on, as Lambda's handlers do. */
async function settled<T>(work: (call: CallContext) => Promise<T>) {
  const pending: Promise<unknown>[] = [];
  try {
    return await work({ waitUntil: (p) => void pending.push(p) });
  } finally {
    await Promise.allSettled(pending);
  }
}

const withPorts = async <T>(h: ReturnType<typeof lambdaHandlers>, work: (ports: Ports) => Promise<T>) => {
  const { shell } = await h.standalone();
  return settled((call) => shell.run(call, (scope) => work(scope.ports())));
};

async function lambdaClient(h: ReturnType<typeof lambdaHandlers>, username: string) {
  const { secret } = await withPorts(h, (ports) =>
    apiClients.create(ports, 'test', { username, permissions: ['.*'], origin: 'cli' }),
  );
  return secret;
}

interface EventOptions {
  headers?: Record<string, string>;
  body?: string;
  base64?: boolean;
  sourceIp?: string;
}

let requests = 0;
/** An API Gateway HTTP API (payload 2.0) event, as API Gateway builds it. */
function v2Event(method: string, target: string, options: EventOptions = {}) {
  const at = target.indexOf('?');
  const rawPath = at < 0 ? target : target.slice(0, at);
  const now = new Date();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: at < 0 ? '' : target.slice(at + 1),
    headers: { host: DOMAIN, 'user-agent': 'vitest', 'x-forwarded-proto': 'https', ...options.headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'edgeapi',
      domainName: DOMAIN,
      domainPrefix: 'edgeapi',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: options.sourceIp ?? ADDRESS, userAgent: 'vitest' },
      requestId: `req-${++requests}`,
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    isBase64Encoded: options.base64 ?? false,
    ...(options.body !== undefined && { body: options.body }),
  };
}

/** An API Gateway REST API (payload 1.0) event: the caller's address is under requestContext.identity. */
function v1Event(method: string, target: string, options: EventOptions = {}) {
  const url = new URL(target, `https://${DOMAIN}`);
  const headers = { Host: DOMAIN, 'X-Forwarded-Proto': 'https', ...options.headers };
  const query = Object.fromEntries(url.searchParams);
  return {
    resource: '/{proxy+}',
    path: url.pathname,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: url.search ? query : null,
    multiValueQueryStringParameters: url.search
      ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]]))
      : null,
    pathParameters: { proxy: url.pathname.slice(1) },
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'edgerest',
      domainName: DOMAIN,
      httpMethod: method,
      path: `/prod${url.pathname}`,
      protocol: 'HTTP/1.1',
      requestId: `req-${++requests}`,
      resourcePath: '/{proxy+}',
      stage: 'prod',
      identity: { sourceIp: options.sourceIp ?? ADDRESS, userAgent: 'vitest' },
    },
    body: options.body ?? null,
    isBase64Encoded: options.base64 ?? false,
  };
}

interface LambdaResult {
  statusCode: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  body: string;
  isBase64Encoded: boolean;
}

async function invoke(event: object): Promise<Answer> {
  const result = (await handlers.handler(event as never, {} as never)) as LambdaResult;
  const headers: Record<string, string> = { ...result.headers };
  for (const [k, v] of Object.entries(result.multiValueHeaders ?? {})) headers[k] = v.join(', ');
  const text = result.isBase64Encoded ? Buffer.from(result.body, 'base64').toString('utf8') : result.body;
  return { status: result.statusCode, headers, text };
}

const authHeaders = (options: { auth?: string; headers?: Record<string, string> }) => ({
  ...options.headers,
  ...(options.auth && { authorization: options.auth }),
});

const viaLambda =
  (sourceIp = ADDRESS): Send =>
  (method, target, options = {}) =>
    invoke(v2Event(method, target, { headers: authHeaders(options), body: options.body, sourceIp }));

/** The Node app of the harness; its client address is the x-test-address header. */
const viaNode =
  (address = ADDRESS): Send =>
  async (method, target, options = {}) => {
    const headers = { ...authHeaders(options), 'x-test-address': address };
    const res = await node.app.request(`https://localhost${target}`, { method, headers, body: options.body });
    return { status: res.status, headers: Object.fromEntries(res.headers), text: await res.text() };
  };

describe('the Lambda handler (API Gateway events)', () => {
  const names = { username: 'lambdaclient', destination: 'LAMBDA1', user: 'lambdauser', hostId: 71_001 };
  let lambdaAuth: string;
  let nodeAuth: string;

  beforeAll(async () => {
    await expect(handlers.migrate()).resolves.toEqual({ status: 'migrated' });
    lambdaAuth = basic(names.username, await lambdaClient(handlers, names.username));
    nodeAuth = await node.client(names.username, ['.*']);
  });

  it("migrate() again finds nothing left to apply; the database is the suite's", async () => {
    await expect(handlers.migrate()).resolves.toEqual({ status: 'migrated' });
    expect(fs.existsSync(path.join(dataDir, 'pgdata'))).toBe(!process.env.TEST_DATABASE_URL);
  });

  it('answers the API slice as the Node app does', async () => {
    const secretOf = (auth: string) => Buffer.from(auth.slice(6), 'base64').toString().split(':')[1]!;
    const lambda = await apiSlice(viaLambda(), { ...names, secret: secretOf(lambdaAuth) }, source);
    const nodeSlice = await apiSlice(viaNode(), { ...names, secret: secretOf(nodeAuth) }, source);
    expect(lambda.steps).toEqual(nodeSlice.steps);
    // What they agree on is the API's answer, not an error both give.
    const { steps } = lambda;
    expect(steps.version).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(steps['no credentials']).toMatchObject({ status: 401, wwwAuthenticate: expect.stringMatching(/^Basic /) });
    expect(steps['wrong secret']).toMatchObject({
      status: 500,
      body: { status: 'error', message: 'User not authorized' },
    });
    expect(steps['user list'].body).toMatchObject({ status: 'ok', userList: [{ id: names.user }] });
    expect(steps['destination restore'].status).toBe(200);
    expect(steps['destination list'].body).toMatchObject({ destinationList: [{ name: names.destination }] });
    expect(steps['datafile put']).toMatchObject({ status: 200, body: { status: 'ok', id: '<id>' } });
    expect(steps['datafile size']).toMatchObject({ status: 200, body: { status: 'ok', size: 1234 } });
    expect(steps.healthz.status).toBe(200);
  });

  it('takes an API Gateway v1 event as a v2 one', async () => {
    const list = await invoke(v1Event('GET', '/v1/incoming/user/list', { headers: { Authorization: lambdaAuth } }));
    const v2 = await viaLambda()('GET', '/v1/incoming/user/list', { auth: lambdaAuth });
    expect(list.status).toBe(200);
    expect(normalised(list)).toEqual(normalised(v2));
    const add = new URLSearchParams({ id: 'v1user', email: 'v1user@example.org', iso: 'fr' });
    const added = await invoke(
      v1Event('POST', `/v1/incoming/user/add2?${add}`, { headers: { Authorization: lambdaAuth } }),
    );
    expect(added.status, added.text).toBe(200);
    const after = await viaLambda()('GET', '/v1/incoming/user/list', { auth: lambdaAuth });
    expect(JSON.parse(after.text).userList.map((u: { id: string }) => u.id)).toContain('v1user');
  });

  it('decodes a base64 body (isBase64Encoded) as the Node app reads the plain one', async () => {
    const form = new URLSearchParams({ value: '/base64/directory' }).toString();
    // A restore gives its hosts ids of its own: each server's, from its backup.
    const hostOf = async (send: Send, auth: string) => {
      const backup = await send('GET', `/v1/destination/backup/${names.destination}`, { auth });
      return JSON.parse(backup.text).backup.destinations[0].associations[0].host.hostid as number;
    };
    const option = (hostid: number) => `/v1/host/option?hostid=${hostid}&name=ectrans.comment`;
    const headers = { authorization: lambdaAuth, 'content-type': 'application/x-www-form-urlencoded' };
    const encoded = Buffer.from(form).toString('base64');
    expect(encoded).not.toContain('base64/directory');
    const lambdaOption = option(await hostOf(viaLambda(), lambdaAuth));
    const lambda = await invoke(v2Event('POST', lambdaOption, { headers, body: encoded, base64: true }));
    const nodeAnswer = await viaNode()('POST', option(await hostOf(viaNode(), nodeAuth)), {
      auth: nodeAuth,
      headers: { 'content-type': headers['content-type'] },
      body: form,
    });
    expect(lambda.status, lambda.text).toBe(200);
    expect(normalised(lambda)).toEqual(normalised(nodeAnswer));
    const backup = await viaLambda()('GET', `/v1/destination/backup/${names.destination}`, { auth: lambdaAuth });
    expect(backup.text).toContain('/base64/directory');
    // A JSON body the same way: the categories of an incoming user.
    const categories = Buffer.from(JSON.stringify(['lambda-category'])).toString('base64');
    const category = await invoke(
      v2Event('POST', `/v1/incoming/category/add?id=${names.user}`, {
        headers: { authorization: lambdaAuth, 'content-type': 'application/json' },
        body: categories,
        base64: true,
      }),
    );
    const nodeCategory = await viaNode()('POST', `/v1/incoming/category/add?id=${names.user}`, {
      auth: nodeAuth,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(['lambda-category']),
    });
    expect(category.status, category.text).toBe(200);
    expect(normalised(category)).toEqual(normalised(nodeCategory));
  });

  it("takes the caller's address from requestContext.http.sourceIp (v2) and .identity.sourceIp (v1)", async () => {
    // Wire decisions §2: 20 failures of one (username, address) pair refuse that pair alone.
    const username = 'throttled';
    const secret = await lambdaClient(handlers, username);
    const nodeRight = await node.client(username, ['.*']);
    const wrong = basic(username, 'not-the-secret');
    for (let i = 0; i < 20; i++) {
      expect((await viaLambda()('GET', '/v1/incoming/user/list', { auth: wrong })).status).toBe(500);
      expect((await viaNode()('GET', '/v1/incoming/user/list', { auth: wrong })).status).toBe(500);
    }
    const right = basic(username, secret);
    const refused = await viaLambda()('GET', '/v1/incoming/user/list', { auth: right });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(normalised(refused)).toEqual(
      normalised(await viaNode()('GET', '/v1/incoming/user/list', { auth: nodeRight })),
    );
    expect((await viaLambda(ELSEWHERE)('GET', '/v1/incoming/user/list', { auth: right })).status).toBe(200);
    expect((await viaNode(ELSEWHERE)('GET', '/v1/incoming/user/list', { auth: nodeRight })).status).toBe(200);
    const v1 = (sourceIp: string) =>
      invoke(v1Event('GET', '/v1/incoming/user/list', { headers: { Authorization: right }, sourceIp }));
    expect((await v1(ADDRESS)).status).toBe(429);
    expect((await v1(ELSEWHERE)).status).toBe(200);
  });
});

interface Recorded {
  target: string;
  contentType: string;
  signature: string;
  authorization: string;
  url: string;
  body: { QueueUrl?: string; MessageBody?: string; Entries?: { Id: string; MessageBody: string }[] };
}

/** SQS's JSON protocol, recorded: every request with whether its SigV4 signature is right, and its messages. */
async function startSqsRecorder() {
  const requests: Recorded[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      // The signer states no payload hash for SQS; the checker reads it from this header.
      req.headers['x-amz-content-sha256'] ??= createHash('sha256').update(raw).digest('hex');
      const body = JSON.parse(raw.toString('utf8') || '{}') as Recorded['body'];
      requests.push({
        target: String(req.headers['x-amz-target'] ?? ''),
        contentType: String(req.headers['content-type'] ?? ''),
        signature: checkSignature(req, new Map([[SQS_KEY.id, SQS_KEY.secret]])),
        authorization: String(req.headers.authorization ?? ''),
        url: req.url ?? '',
        body,
      });
      const md5 = (text: string) => createHash('md5').update(text).digest('hex');
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      if (body.Entries) {
        const Successful = body.Entries.map((e) => ({
          Id: e.Id,
          MessageId: randomUUID(),
          MD5OfMessageBody: md5(e.MessageBody),
        }));
        res.end(JSON.stringify({ Successful, Failed: [] }));
      } else res.end(JSON.stringify({ MessageId: randomUUID(), MD5OfMessageBody: md5(body.MessageBody ?? '') }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    queueUrl: `http://127.0.0.1:${port}/123456789012/ecpds-deliveries`,
    requests,
    /** The message bodies sent so far, in order. */
    messages: () =>
      requests.flatMap((r) => (r.body.Entries ? r.body.Entries.map((e) => e.MessageBody) : [r.body.MessageBody!])),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let recorder: Awaited<ReturnType<typeof startSqsRecorder>>;
/** The queue variables of the Lambda's environment, SQS being the recorder. */
const sqsEnv = () => ({
  ECPDS_SQS_QUEUE_URL: recorder.queueUrl,
  AWS_ACCESS_KEY_ID: SQS_KEY.id,
  AWS_SECRET_ACCESS_KEY: SQS_KEY.secret,
  AWS_REGION: REGION,
});

describe('delivery through SQS: scheduled() dispatches, deliveries() sends', () => {
  let sink: HttpSink;
  let auth: string;
  let hostIds = 72_000;
  let seeds = 100;
  const tlsRefusal = process.env.NODE_TLS_REJECT_UNAUTHORIZED;

  beforeAll(async () => {
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    } as never);
    sink = await startHttpSink({ tls: { key: pems.private, cert: pems.cert } });
    auth = basic('deliverer', await lambdaClient(handlers, 'deliverer'));
    // The edge sends http only over https, and Node's fetch takes no certificate once started: the sink's
    // self-signed one is accepted for this suite alone.
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  });
  afterAll(async () => {
    if (tlsRefusal === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = tlsRefusal;
    await sink?.stop();
  });

  /** A started destination whose host PUTs over https to the sink, through the API. */
  async function destination(name: string) {
    const body = destinationBackup(
      name,
      [{ method: 'http', host: `127.0.0.1:${sink.port}`, dir: name.toLowerCase(), data: 'http.scheme = "https"' }],
      { nextHostId: () => ++hostIds },
    );
    const restored = await viaLambda()('PUT', '/v1/destination/backup', {
      auth,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(restored.status, restored.text).toBe(200);
    await withPorts(handlers, (ports) => setDestinationStatus(ports, 'test', name, 'start'));
  }

  async function put(name: string, size: number) {
    const seed = ++seeds;
    const q = new URLSearchParams({ destination: name, source: source.url(seed, size), target: `out/${seed}.bin` });
    const r = await viaLambda()('GET', `/v1/datafile/put?${q}`, { auth });
    expect(r.status, r.text).toBe(200);
    return { dataFileId: JSON.parse(r.text).id as number, bytes: blob(seed, size), target: `out/${seed}.bin` };
  }

  const transferOf = (h: ReturnType<typeof lambdaHandlers>, dataFileId: number) =>
    withPorts(h, async (ports) => {
      const list = await ports.repos.transfers.list({ limit: 1000 });
      const found = list.find((t) => t.dataFileId === dataFileId)!;
      return { ...found, history: (await ports.repos.transfers.history(found.id)).map((e) => e.status) };
    });

  it('sends SendMessageBatch signed for sqs in the region, at most 10 entries each, and SendMessage', async () => {
    const before = recorder.requests.length;
    const queue = sqsQueue({
      queueUrl: recorder.queueUrl,
      region: REGION,
      credentials: { accessKeyId: SQS_KEY.id, secretAccessKey: SQS_KEY.secret },
    });
    const bodies = Array.from({ length: 23 }, (_, i) => ({ body: { destination: `D${i}` } }));
    await queue.sendBatch(bodies);
    await queue.send({ destination: 'ONE' });
    const sent = recorder.requests.slice(before);
    expect(sent.map((r) => [r.target, r.body.Entries?.length ?? null])).toEqual([
      ['AmazonSQS.SendMessageBatch', 10],
      ['AmazonSQS.SendMessageBatch', 10],
      ['AmazonSQS.SendMessageBatch', 3],
      ['AmazonSQS.SendMessage', null],
    ]);
    for (const r of sent) {
      expect(r.signature).toBe('valid');
      expect(r.authorization).toMatch(
        new RegExp(`^AWS4-HMAC-SHA256 Credential=${SQS_KEY.id}/\\d{8}/${REGION}/sqs/aws4_request, `),
      );
      expect(r.contentType).toBe('application/x-amz-json-1.0');
      expect(r.body.QueueUrl).toBe(recorder.queueUrl);
    }
    expect(
      recorder
        .messages()
        .slice(-24)
        .map((m) => JSON.parse(m).destination),
    ).toEqual([...bodies.map((b) => b.body.destination), 'ONE']);
  });

  it('a refused entry fails the batch', async () => {
    const refusing = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.end(JSON.stringify({ Successful: [], Failed: [{ Id: '0', Code: 'X', Message: 'queue is full' }] })),
      );
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const { port } = refusing.address() as AddressInfo;
    const queue = sqsQueue({
      queueUrl: `http://127.0.0.1:${port}/1/q`,
      region: REGION,
      credentials: { accessKeyId: SQS_KEY.id, secretAccessKey: SQS_KEY.secret },
    });
    await expect(queue.sendBatch([{ body: { destination: 'X' } }])).rejects.toThrow(
      'SQS refused 1 message(s): queue is full',
    );
    await new Promise<void>((resolve) => refusing.close(() => resolve()));
  });

  it("scheduled() queues the due destination; deliveries() of the queue's bodies sends the bytes: DONE", async () => {
    const name = 'LAMBDASQS';
    await destination(name);
    const file = await put(name, 300_000);
    const before = recorder.requests.length;
    await handlers.scheduled();
    const sent = recorder.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const r of sent) {
      expect(r.signature).toBe('valid');
      expect(r.authorization).toMatch(new RegExp(`Credential=${SQS_KEY.id}/\\d{8}/${REGION}/sqs/aws4_request`));
      expect(r.target).toBe('AmazonSQS.SendMessageBatch');
      expect(r.body.QueueUrl).toBe(recorder.queueUrl);
      expect(r.body.Entries!.length).toBeLessThanOrEqual(10);
    }
    const bodies = sent.flatMap((r) => r.body.Entries!.map((e) => e.MessageBody));
    expect(bodies.map((b) => JSON.parse(b))).toContainEqual({ destination: name });
    // Nothing sent yet: the queue's consumer sends.
    expect(sink.file(`${name.toLowerCase()}/${file.target}`)).toBeNull();
    expect((await transferOf(handlers, file.dataFileId)).status).toBe('WAIT');

    await handlers.deliveries({ Records: bodies.map((body) => ({ body })) });
    const delivered = sink.file(`${name.toLowerCase()}/${file.target}`);
    expect(delivered?.equals(file.bytes)).toBe(true);
    expect(sink.requests.filter((r) => r.url === `/${name.toLowerCase()}/${file.target}`)).toHaveLength(1);
    const transfer = await transferOf(handlers, file.dataFileId);
    expect([transfer.status, transfer.message]).toEqual(['DONE', null]);
    expect(transfer.history).toEqual(['WAIT', 'EXEC', 'DONE']);
    // Done is done: the next scheduled run has nothing of it to queue.
    const again = recorder.messages().length;
    await handlers.scheduled();
    const later = recorder
      .messages()
      .slice(again)
      .map((b) => JSON.parse(b).destination);
    expect(later).not.toContain(name);
  });

  it('a body that is no delivery message is ignored, the others of the batch delivered', async () => {
    const name = 'LAMBDAMIXED';
    await destination(name);
    const file = await put(name, 1000);
    await handlers.deliveries({
      Records: [{ body: 'not json' }, { body: '{}' }, { body: JSON.stringify({ destination: name }) }],
    });
    expect(sink.file(`${name.toLowerCase()}/${file.target}`)?.equals(file.bytes)).toBe(true);
    expect((await transferOf(handlers, file.dataFileId)).status).toBe('DONE');
  });

  it('without ECPDS_SQS_QUEUE_URL, scheduled() delivers in its own invocation', async () => {
    const name = 'LAMBDALOCAL';
    await destination(name);
    const file = await put(name, 50_000);
    // One client of the embedded database at a time: the queue's handlers let go of it first.
    await (await handlers.standalone()).close();
    handlersOpen = false;
    const local = lambdaHandlers(baseEnv);
    try {
      const before = recorder.requests.length;
      await local.scheduled();
      expect(recorder.requests.length).toBe(before);
      expect(sink.file(`${name.toLowerCase()}/${file.target}`)?.equals(file.bytes)).toBe(true);
      const transfer = await transferOf(local, file.dataFileId);
      expect([transfer.status, transfer.history]).toEqual(['DONE', ['WAIT', 'EXEC', 'DONE']]);
    } finally {
      await (await local.standalone()).close();
    }
  });
});
