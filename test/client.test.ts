import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDemoData } from '../core/system/demo.ts';
import { VERSION } from '../core/system/version.ts';
import { ApiError, type Client, createClient } from '../functions/client/index.ts';
import { createHarness, type Harness } from './support/harness.ts';

let h: Harness;
let server: Server;
let baseUrl: string;
let root: string;
let secret: string;

// The server runs behind a (pretend) TLS-terminating proxy: this fetch adds what the proxy would.
const viaProxy = (input: string, init: RequestInit) =>
  fetch(input, { ...init, headers: { ...(init.headers as Record<string, string>), 'x-forwarded-proto': 'https' } });
const clientAs = (username: string, pass: string, fetchImpl = viaProxy): Client =>
  createClient({ baseUrl, username, secret: pass, fetch: fetchImpl });

async function failure(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('the call succeeded');
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-client-'));
  fs.writeFileSync(path.join(root, 'fc.grib'), 'x'.repeat(4096));
  h = await createHarness({ trustProxy: true, sourceRoots: [root] });
  await loadDemoData(h.ports);
  const auth = await h.client('pipeline', ['.*']);
  secret = Buffer.from(auth.slice('Basic '.length), 'base64').toString().slice('pipeline:'.length);
  server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: h.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s as Server));
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('createClient', () => {
  it('has one method per catalogue operation', async () => {
    const { catalogue } = await import('../core/catalogue.ts');
    expect(Object.keys(clientAs('pipeline', secret)).sort()).toEqual(Object.keys(catalogue).sort());
  });

  it('calls version without credentials', async () => {
    const anonymous = createClient({ baseUrl, fetch: viaProxy });
    expect(await anonymous.version()).toEqual({ status: 'ok', version: VERSION });
  });

  it('sends typed query parameters and reads typed answers', async () => {
    const c = clientAs('pipeline', secret);
    await c.incomingUserAdd({
      id: 'jdoe',
      pass: 'pw',
      email: 'jdoe@example.org',
      iso: 'GB',
      active: true,
      portalService: 'open-access',
    });
    const { userList } = await c.incomingUserList();
    const jdoe = userList.find((u) => u.id === 'jdoe')!;
    expect(jdoe).toMatchObject({ iso: 'gb', active: true, portalService: 'open-access', password: 'pw' });
    await c.incomingAssociationAdd({ id: 'jdoe', destination: 'MO_EXETER' });
    expect((await c.incomingAssociationList({ id: 'jdoe' })).associationList).toEqual(['MO_EXETER']);
    const list = await c.destinationList({ iso: 'gb', type: 2 });
    expect(list.destinationList.map((d) => d.name)).toEqual(['MO_EXETER']);
  });

  it('registers, measures and deletes a data file', async () => {
    const c = clientAs('pipeline', secret);
    const { id } = await c.datafilePut({
      destination: 'MO_EXETER',
      source: path.join(root, 'fc.grib'),
      priority: 10,
      lifetime: '2d',
      standby: true,
    });
    expect(await c.datafileSize({ id })).toEqual({ status: 'ok', size: 4096 });
    expect(await c.datafileDel({ id })).toEqual({ status: 'ok' });
    const again = await failure(c.datafileDel({ id }));
    expect(again).toMatchObject({ status: 500, message: 'Already deleted', operation: 'datafileDel' });
    expect(again.requestId).toBeTruthy();
  });

  it('round-trips JSON bodies: metadata and backups as the GET answers them', async () => {
    const c = clientAs('pipeline', secret);
    const values = await c.metadataGet({ name: 'MO_EXETER' });
    expect(values.success).toBe('yes');
    values.metadata.General!.notes = 'Changed by the client';
    const stored = await c.metadataPut({
      name: 'MO_EXETER',
      body: { metadata: values.metadata, includeInNotes: values.includeInNotes },
    });
    expect(stored).toMatchObject({ success: 'yes', destination: 'MO_EXETER' });
    expect((await c.metadataGet({ name: 'MO_EXETER' })).metadata.General!.notes).toBe('Changed by the client');
    const { backup } = await c.backupGet({ name: 'MO_EXETER' });
    expect((await c.backupPut({ body: { backup }, copySharedHost: false })).message).toBe(
      'Number of Destination(s) created: 0',
    );
    await c.incomingCategoryAdd({ id: 'jdoe', body: ['no-marker'] });
    expect((await c.incomingUserList()).userList.find((u) => u.id === 'jdoe')!.active).toBe(false);
  });

  it('sends form fields for the form operation', async () => {
    const c = clientAs('pipeline', secret);
    const { backup } = await c.backupGet({ name: 'MO_EXETER' });
    const hostid = backup.destinations[0]!.associations[0]!.host.hostid;
    await c.hostOption({ hostid, name: 'sftp.port', value: 'a value with spaces & = signs' });
    const after = await c.backupGet({ name: 'MO_EXETER' });
    expect(after.backup.destinations[0]!.associations[0]!.host.data).toContain(
      'sftp.port = "a value with spaces & = signs"',
    );
  });

  it('encodes path values', async () => {
    const c = clientAs('pipeline', secret);
    expect((await c.destinationGet({ name: 'MO_EXETER' })).destination.countryIso).toBe('gb');
    expect(await failure(c.destinationGet({ name: 'NO SUCH/NAME?' }))).toMatchObject({
      status: 500,
      message: 'Destination NO SUCH/NAME? not found',
    });
  });

  it('turns every kind of refusal into an ApiError with status and message', async () => {
    const anonymous = createClient({ baseUrl, fetch: viaProxy });
    expect(await failure(anonymous.incomingUserList())).toMatchObject({
      status: 401,
      message: 'Operation only available to registered users',
    });
    expect(await failure(clientAs('pipeline', 'wrong').incomingUserList())).toMatchObject({
      status: 500,
      message: 'User not authorized',
    });
    const c = clientAs('pipeline', secret);
    expect(await failure(c.datafileSize({ id: 'abc' as never }))).toMatchObject({
      status: 400,
      message: "Invalid value for parameter id: 'abc' (integer expected)",
    });
    expect(await failure(c.incomingAssociationList({} as never))).toMatchObject({
      status: 412,
      message: 'Missing parameter: id',
    });
    const direct = clientAs('pipeline', secret, (input, init) => fetch(input, init));
    const refused = await failure(direct.version());
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({
      status: 403,
      message: 'Operation only available through a secure connection (https)',
    });
  });

  it('accepts a base URL ending in /v1 and extra headers', async () => {
    const c = createClient({
      baseUrl: `${baseUrl}/v1/`,
      username: 'pipeline',
      secret,
      headers: { 'x-forwarded-proto': 'https', 'x-request-id': 'client-test-1' },
    });
    expect((await c.destinationTypeList()).typeList.length).toBeGreaterThan(0);
    expect(h.logLines.some((l) => l.includes('"requestId":"client-test-1"'))).toBe(true);
  });
});
