import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { importFields } from '../../core/metadata/fields.ts';
import { call, client, sourceBucket, sourcePort, withPorts, worker, workerEnv } from './support.ts';

const stamp = Date.now().toString(36);
const D1 = `WK_${stamp}_A`;
const D2 = `WK_${stamp}_B`;
let admin: string;
let reader: string;

const backup = (names: string[], extra: object[] = []) => ({
  backup: {
    destinations: [
      ...names.map((name, i) => ({
        destination: { name, countryIso: 'fr', type: 1, comment: 'edge', data: '' },
        associations: [
          {
            priority: 0,
            host: {
              hostid: i + 1,
              nickname: `${name}-h`,
              host: 'h.example.org',
              login: 'u',
              passwd: `pw-${name}`,
              networkCode: 'I',
              data: 'ftp.port = "21"',
            },
          },
        ],
      })),
      ...extra,
    ],
    aliases: [],
    methods: [],
    ecusers: [],
  },
});

beforeAll(async () => {
  admin = await client(`wadmin_${stamp}`, ['.*']);
  reader = await client(`wreader_${stamp}`, ['destinationBackupList|incomingUserList|getDestinationMeta.*']);
  await withPorts((ports) =>
    importFields(ports, 'test', [
      { name: `wk_text_${stamp}`, label: 'Text', type: 'text', category: 'General' },
      { name: `wk_secret_${stamp}`, label: 'Secret', type: 'password', category: 'Access', defaultValue: 'dflt' },
    ]),
  );
});

describe('inside workerd', () => {
  it('answers the version, 403 over plain HTTP and 401 without credentials', async () => {
    expect((await call('GET', '/v1/version')).json).toMatchObject({ status: 'ok' });
    expect((await call('GET', '/v1/version', { scheme: 'http' })).status).toBe(403);
    const r = await call('GET', '/v1/incoming/user/list');
    expect(r.status).toBe(401);
    expect(r.text).toBe('Operation only available to registered users');
  });

  it('refuses a missing permission with the JSON error', async () => {
    const r = await call('POST', `/v1/web/user/add2?id=x${stamp}`, { auth: reader });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ status: 'error', message: 'User not authorized' });
  });

  it('restores destinations in one transaction: a failing entry applies nothing', async () => {
    const bad = { destination: { name: `WK_${stamp}_BAD`, countryIso: 'zz', type: 1 }, associations: [] };
    const failed = await call('PUT', '/v1/destination/backup', { auth: admin, body: backup([D1], [bad]) });
    expect(failed.json).toEqual({ status: 'error', message: 'Country zz not found' });
    expect((await call('GET', `/v1/destination/${D1}`, { auth: admin })).json.message).toBe(
      `Destination ${D1} not found`,
    );
    const ok = await call('PUT', '/v1/destination/backup', { auth: admin, body: backup([D1, D2]) });
    expect(ok.json).toEqual({ status: 'ok', message: 'Number of Destination(s) created: 2' });
  });

  it('serves every destination, backup and host endpoint', async () => {
    expect(
      (await call('GET', '/v1/destination/list?iso=FR', { auth: admin })).json.destinationList.map((d: any) => d.name),
    ).toEqual(expect.arrayContaining([D1, D2]));
    expect((await call('GET', `/v1/destination/${D1}`, { auth: admin })).json.destination).toMatchObject({
      name: D1,
      country: 'fr',
      type: 1,
    });
    expect((await call('GET', '/v1/destination/type/list', { auth: admin })).json.typeList[0]).toEqual({
      0: 'Acquisition',
    });
    expect((await call('GET', '/v1/destination/country/list', { auth: admin })).json.countryList).toContainEqual({
      iso: 'fr',
      name: 'France',
    });
    const full = await call('GET', `/v1/destination/backup/${D1}`, { auth: admin });
    const host = full.json.backup.destinations[0].associations[0].host;
    expect(host.passwd).toBe(`pw-${D1}`);
    const redacted = await call('GET', '/v1/destination/backup?iso=fr', { auth: reader });
    expect(redacted.json.backup.destinations.length).toBeGreaterThanOrEqual(2);
    expect(redacted.json.backup.destinations[0].associations[0].host).not.toHaveProperty('passwd');
    const option = await call('POST', `/v1/host/option?hostid=${host.hostid}&name=ftp.timeout`, {
      auth: admin,
      form: { value: '30' },
    });
    expect(option.json).toEqual({ status: 'ok' });
    const after = await call('GET', `/v1/destination/backup/${D1}`, { auth: admin });
    expect(after.json.backup.destinations[0].associations[0].host.data).toBe('ftp.port = "21"\nftp.timeout = "30"');
  });

  it('serves the metadata endpoints with sensitive values only for showSensitiveInfo', async () => {
    const fields = await call('GET', '/v1/destination/metadata/fields', { auth: reader });
    expect(fields.json.success).toBe('yes');
    expect(fields.json.fields.find((f: any) => f.name === `wk_secret_${stamp}`).defaultValue).toBeNull();
    const put = await call('PUT', `/v1/destination/${D2}/metadata`, {
      auth: admin,
      body: {
        metadata: { General: { [`wk_text_${stamp}`]: ' hello ' }, Access: { [`wk_secret_${stamp}`]: 'top' } },
        includeInNotes: { General: { [`wk_text_${stamp}`]: true } },
      },
    });
    expect(put.json).toEqual({ success: 'yes', destination: D2, count: 2 });
    const seen = await call('GET', `/v1/destination/${D2}/metadata`, { auth: admin });
    expect(seen.json.metadata.Access[`wk_secret_${stamp}`]).toBe('top');
    const hidden = await call('GET', `/v1/destination/${D2}/metadata`, { auth: reader });
    expect(hidden.json.metadata.General[`wk_text_${stamp}`]).toBe('hello');
    expect(hidden.json.metadata.Access).toBeUndefined();
  });

  it('serves every incoming-user and web-user endpoint', async () => {
    const id = `wu_${stamp}`;
    expect(
      (await call('POST', `/v1/incoming/user/add?id=${id}&pass=pw1&email=${id}%40example.org&iso=fr`, { auth: admin }))
        .json,
    ).toEqual({ status: 'ok' });
    expect(
      (await call('POST', `/v1/incoming/category/add?id=${id}`, { auth: admin, body: ['ecpds-users'] })).json,
    ).toEqual({ status: 'ok' });
    expect(
      (await call('POST', `/v1/incoming/association/add?id=${id}&destination=${D1}`, { auth: admin })).json,
    ).toEqual({ status: 'ok' });
    expect((await call('GET', `/v1/incoming/association/list?id=${id}`, { auth: admin })).json.associationList).toEqual(
      [D1],
    );
    const listed = (await call('GET', `/v1/incoming/user/list?destination=${D1}`, { auth: admin })).json.userList;
    expect(listed).toEqual([expect.objectContaining({ id, active: true, associations: [D1], password: 'pw1' })]);
    expect(
      (await call('GET', '/v1/incoming/user/list', { auth: reader })).json.userList.find((u: any) => u.id === id),
    ).not.toHaveProperty('password');
    expect(
      (await call('DELETE', `/v1/incoming/association/del?id=${id}&destination=${D1}`, { auth: admin })).json,
    ).toEqual({ status: 'ok' });
    expect(
      (await call('POST', `/v1/incoming/user/add2?id=${id}&email=${id}%40example.org&iso=fr`, { auth: admin })).json,
    ).toEqual({ status: 'ok' });
    expect((await call('DELETE', `/v1/incoming/user/del/${id}`, { auth: admin })).json).toEqual({ status: 'ok' });

    expect((await call('POST', `/v1/web/user/add?id=${id}&pass=pw&active=true`, { auth: admin })).json).toEqual({
      status: 'ok',
    });
    const generated = await call('POST', `/v1/web/user/add2?id=${id}x&active=true`, { auth: admin });
    expect(generated.json.pass).toMatch(/^\S{12,}$/);
    const users = (await call('GET', '/v1/web/user/list', { auth: admin })).json.userList;
    expect(users.find((u: any) => u.id === `${id}x`).password).toBe(generated.json.pass);
    expect((await call('DELETE', `/v1/web/user/del/${id}x`, { auth: admin })).json).toEqual({ status: 'ok' });
  });

  it('serves the monitoring endpoints', async () => {
    for (const path of [
      '/v1/monitoring/summary',
      `/v1/monitoring/summary/P${stamp}`,
      `/v1/monitoring/summary/P${stamp}/00`,
    ]) {
      expect((await call('GET', path, { auth: admin })).json).toEqual({
        status: 'ok',
        stepStatusList: expect.any(Array),
      });
    }
    expect((await call('GET', `/v1/monitoring/summary/P${stamp}/00/1/fc`, { auth: admin })).json).toEqual({
      status: 'ok',
      stepStatusHistoryList: [],
    });
    expect((await call('GET', `/v1/monitoring/summary/P${stamp}/00/x/fc`, { auth: admin })).status).toBe(400);
  });

  it('registers data files from allowed http sources only, and sweeps on the cron trigger', async () => {
    const source = `http://${sourcePort()}/data/fc.grib`;
    const put = await call(
      'GET',
      `/v1/datafile/put?destination=${D1}&source=${encodeURIComponent(source)}&uniquename=u${stamp}`,
      { auth: admin },
    );
    expect(put.json).toEqual({ status: 'ok', id: expect.any(Number) });
    expect((await call('GET', `/v1/datafile/size?id=${put.json.id}`, { auth: admin })).json).toEqual({
      status: 'ok',
      size: 4096,
    });
    const local = await call('GET', `/v1/datafile/put?destination=${D1}&source=/etc/passwd`, { auth: admin });
    expect(local.json.message).toMatch(/^Source \/etc\/passwd not allowed/);
    expect((await call('DELETE', `/v1/datafile/del?id=${put.json.id}`, { auth: admin })).json).toEqual({
      status: 'ok',
    });
    expect((await call('DELETE', `/v1/datafile/del?id=${put.json.id}`, { auth: admin })).json.message).toBe(
      'Already deleted',
    );

    const ctx = createExecutionContext();
    await worker.scheduled({}, workerEnv, ctx);
    await waitOnExecutionContext(ctx);
  });

  it('registers data files from objects of the R2 buckets of ECPDS_SOURCE_BUCKETS, their size from R2', async () => {
    const key = `in/${stamp}/fc 00%.grib`;
    await sourceBucket().put(key, new Uint8Array(12_345).fill(7));
    const put = (source: string) =>
      call('GET', `/v1/datafile/put?${new URLSearchParams({ destination: D1, source, target: 'fc.grib' })}`, {
        auth: admin,
      });
    const registered = await put(`r2://ECPDS_SOURCES/${key}`);
    expect(registered.json).toEqual({ status: 'ok', id: expect.any(Number) });
    expect((await call('GET', `/v1/datafile/size?id=${registered.json.id}`, { auth: admin })).json).toEqual({
      status: 'ok',
      size: 12_345,
    });
    const refused: Array<[string, string]> = [
      [`r2://ECPDS_R2/${key}`, 'not allowed: ECPDS_R2 is not an allowed source bucket'],
      [`r2://NOT_BOUND/${key}`, 'not reachable: NOT_BOUND is not an R2 bucket bound to this Worker'],
      [`r2://ECPDS_SOURCES/in/${stamp}/missing.grib`, 'not reachable: no such object'],
      ['r2://ECPDS_SOURCES/', 'is not a valid R2 source: its key is empty'],
      ['r2://ECPDS_SOURCES', 'is not a valid R2 source: r2://<binding>/<key> expected'],
      ['/data/fc.grib', 'not allowed: only http(s) and r2 sources are supported here'],
    ];
    for (const [source, reason] of refused) {
      expect((await put(source)).json, source).toEqual({ status: 'error', message: `Source ${source} ${reason}` });
    }
    const control = await put('r2://ECPDS_SOURCES/in/a\nb.grib');
    expect(control.json.message).toBe(
      'Source r2://ECPDS_SOURCES/in/a\\x0ab.grib not allowed: its key holds a control character',
    );
  });
});
