import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, type Operation, type OperationId, SERVICE_NAMES } from '../core/catalogue.ts';
import { createHarness, type Harness, type Reply } from './support/harness.ts';
import { operationSamples, type Sample, type SampleFixture, samplePath } from './support/operation-samples.ts';

// Every operation of the catalogue against three callers: nobody, a client holding every
// permission but the operation's own, and a client holding exactly that permission. A new
// operation joins the matrix by itself, and fails it until it has a sample request.

const DESTINATION = 'MATRIX';
const NOT_AUTHORIZED = { status: 'error', message: 'User not authorized' };
const operations = Object.entries(catalogue) as [OperationId, Operation][];
const withService = operations.filter(([, op]) => op.access === 'service');
const credentialsOnly = operations.filter(([, op]) => op.access === 'basic');
const open = operations.filter(([, op]) => op.access === 'none');

let h: Harness;
let root: string;
let samples: Record<string, Sample>;
/** Per permission name: a client holding only it, and one holding every other. */
const holder = new Map<string, string>();
const lacker = new Map<string, string>();
let withoutPermissions: string;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-matrix-')));
  fs.writeFileSync(path.join(root, 'matrix.bin'), Buffer.alloc(64, 1));
  h = await createHarness({ sourceRoots: [root] });
  const admin = await h.client('matrix-admin', ['.*']);
  samples = operationSamples(await createFixture(admin));
  withoutPermissions = await h.client('matrix-none', []);
  for (const service of new Set(withService.map(([, op]) => op.service!))) {
    holder.set(service, await h.client(`holds-${service}`, [service]));
    lacker.set(
      service,
      await h.client(
        `lacks-${service}`,
        SERVICE_NAMES.filter((s) => s !== service),
      ),
    );
  }
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** The records the samples act on, made through the API as any caller would. */
async function createFixture(admin: string): Promise<SampleFixture> {
  const ok = async (method: string, url: string, options: { body?: unknown } = {}) => {
    const r = await h.call(method, url, { auth: admin, ...options });
    expect(r.status, `${method} ${url}: ${r.text}`).toBe(200);
    return r.json;
  };
  const host = { hostid: 1, nickname: 'matrix-host', data: '' };
  const backup = {
    backup: {
      destinations: [
        { destination: { name: DESTINATION, countryIso: 'gb', type: 1 }, associations: [{ priority: 0, host }] },
      ],
    },
  };
  await ok('PUT', '/v1/destination/backup', { body: backup });
  const restored = await ok('GET', `/v1/destination/backup/${DESTINATION}`);
  const source = path.join(root, 'matrix.bin');
  const put = (name: string) =>
    ok('GET', `/v1/datafile/put?${new URLSearchParams({ destination: DESTINATION, source, uniquename: name })}`);
  const incoming = (id: string) => ok('POST', `/v1/incoming/user/add2?id=${id}&email=${id}@example.org&iso=gb`);
  await incoming('matrix_gone');
  await incoming('matrix_member');
  await incoming('matrix_loner');
  await ok('POST', `/v1/incoming/association/add?id=matrix_member&destination=${DESTINATION}`);
  await ok('POST', '/v1/web/user/add?id=matrix.gone&pass=Matrix-pass-1');
  return {
    destination: DESTINATION,
    source,
    hostid: restored.backup.destinations[0].associations[0].host.hostid,
    sizedFile: (await put('matrix-sized')).id,
    deletedFile: (await put('matrix-deleted')).id,
    incomingToDelete: 'matrix_gone',
    webToDelete: 'matrix.gone',
    associated: 'matrix_member',
    unassociated: 'matrix_loner',
  };
}

function send(id: OperationId, auth?: string): Promise<Reply> {
  const op: Operation = catalogue[id];
  const sample = samples[id]!;
  return h.call(op.method, samplePath(op.path, sample), { auth, body: sample.body, form: sample.form });
}

/** The operation ran: 200 with the success envelope of its kind. */
function expectAllowed(op: Operation, r: Reply) {
  expect(r.json, r.text).not.toEqual(NOT_AUTHORIZED);
  expect(r.status, r.text).toBe(200);
  if (op.envelope === 'success') expect(r.json.success).toBe('yes');
  else expect(r.json.status).toBe('ok');
}

describe('the sample table', () => {
  it('has a sample request for every operation of the catalogue, and none for others', () => {
    expect(Object.keys(samples).sort()).toEqual(operations.map(([id]) => id).sort());
  });
});

describe.each(withService)('%s (permission-checked)', (id, op) => {
  it(`answers 401 without credentials`, async () => {
    expect((await send(id)).status).toBe(401);
  });

  it(`refuses a client holding every permission but ${op.service}`, async () => {
    const r = await send(id, lacker.get(op.service!));
    expect([r.status, r.json]).toEqual([500, NOT_AUTHORIZED]);
  });

  it(`refuses a client without permissions`, async () => {
    const r = await send(id, withoutPermissions);
    expect([r.status, r.json]).toEqual([500, NOT_AUTHORIZED]);
  });

  it(`runs for a client holding exactly ${op.service}`, async () => {
    expectAllowed(op, await send(id, holder.get(op.service!)));
  });
});

describe.each(credentialsOnly)('%s (credentials only)', (id, op) => {
  it('answers 401 without credentials', async () => {
    expect((await send(id)).status).toBe(401);
  });

  it('runs for a client without permissions', async () => {
    expectAllowed(op, await send(id, withoutPermissions));
  });
});

describe.each(open)('%s (open)', (id, op) => {
  it('runs without credentials', async () => {
    expectAllowed(op, await send(id));
  });
});
