import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as backups from '../core/backups/handlers.ts';
import { catalogue, type Operation, type OperationId, type SuccessEnvelopeId } from '../core/catalogue.ts';
import { envelopes } from '../core/common/operation.ts';
import * as datafiles from '../core/data-files/handlers.ts';
import * as destinations from '../core/destinations/handlers.ts';
import { handlers } from '../core/handlers.ts';
import * as hosts from '../core/hosts/handlers.ts';
import * as incomingUsers from '../core/incoming-users/handlers.ts';
import * as metadata from '../core/metadata/handlers.ts';
import * as monitoring from '../core/monitoring/handlers.ts';
import { loadDemoData } from '../core/system/demo.ts';
import * as system from '../core/system/handlers.ts';
import * as webUsers from '../core/web-users/handlers.ts';
import { servedDocument } from '../functions/http/docs.ts';
import { DOCS_SCRIPT, DOCS_STYLE } from '../functions/http/docs-page.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { operationSamples, samplePath } from './support/operation-samples.ts';

const doc = servedDocument() as any;
const entries = Object.entries(catalogue) as Array<[OperationId, Operation]>;
const operationOf = (op: Operation) => doc.paths[op.path][op.method.toLowerCase()];
const resolve = (o: any): any =>
  o?.$ref
    ? resolve(
        o.$ref
          .slice(2)
          .split('/')
          .reduce((a: any, k: string) => a[k], doc),
      )
    : o;
const param = (id: OperationId, name: string) =>
  operationOf(catalogue[id]).parameters.find((p: any) => p.name === name);

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.license).toEqual({ name: 'Proprietary', identifier: 'LicenseRef-Proprietary' });
    expect(doc.info.contact).toEqual({ name: 'ECPDS Data Dissemination Service', url: '/docs' });
    expect(doc.components.securitySchemes.basic).toEqual(expect.objectContaining({ type: 'http', scheme: 'basic' }));
  });

  it('holds every catalogue operation, tagged with its service name, and nothing else under /v1', () => {
    for (const [id, op] of entries) {
      const o = operationOf(op);
      expect(o?.operationId, id).toBe(id);
      expect(o.summary).toBe(op.summary);
      expect(o.tags).toEqual([op.service ?? op.access]);
      expect(o.security).toEqual(op.access === 'none' ? [] : [{ basic: [] }]);
    }
    const documented = Object.entries(doc.paths)
      .filter(([p]) => p.startsWith('/v1/'))
      .flatMap(([, item]) => Object.values(item as object));
    expect(documented).toHaveLength(entries.length);
    expect(doc.tags.map((t: any) => t.name)).toEqual(
      expect.arrayContaining(['none', 'basic', 'datafilePut', 'monitoringSummaryList', 'metrics']),
    );
  });

  it('gives query parameters their wire type: integer, boolean, enum, pattern', () => {
    expect(param('datafileSize', 'id')).toEqual({
      name: 'id',
      in: 'query',
      required: true,
      schema: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      description: 'integer expected',
    });
    expect(param('datafilePut', 'standby')).toMatchObject({ required: false, schema: { type: 'boolean' } });
    expect(param('datafilePut', 'priority').schema).toEqual({ type: 'integer', minimum: 0, maximum: 99 });
    expect(param('datafilePut', 'priority').description).toContain('integer from 0 to 99 expected');
    expect(param('datafilePut', 'lifetime').schema).toEqual({ type: 'string' });
    expect(param('incomingUserAdd', 'portalService').schema).toEqual({
      type: 'string',
      enum: ['standard-login', 'open-access', 'self-service'],
    });
    expect(param('incomingUserAdd', 'iso').schema).toEqual({ type: 'string', pattern: '^[A-Za-z]{2}$' });
    expect(param('webUserAdd', 'id')).toMatchObject({
      required: true,
      schema: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$', maxLength: 32 },
    });
    expect(param('incomingUserAdd', 'id').schema).toEqual({
      type: 'string',
      pattern: '^[A-Za-z0-9_.@]+$',
      maxLength: 128,
    });
    expect(param('monitoringHistory', 'step')).toMatchObject({
      in: 'path',
      required: true,
      schema: { type: 'integer' },
    });
    expect(param('destinationGet', 'name')).toMatchObject({ in: 'path', required: true });
    expect(operationOf(catalogue.version).parameters).toBeUndefined();
  });

  it('describes the bodies: a JSON array, documented JSON objects, form fields', () => {
    const categories = operationOf(catalogue.incomingCategoryAdd).requestBody;
    expect(categories.content['application/json'].schema).toEqual({ type: 'array', items: { type: 'string' } });
    const meta = resolve(operationOf(catalogue.metadataPut).requestBody.content['application/json'].schema);
    expect(meta.required).toEqual(['metadata']);
    const backup = resolve(operationOf(catalogue.backupPut).requestBody.content['application/json'].schema);
    expect(backup.properties.backup.properties.destinations.type).toBe('array');
    const hostOption = operationOf(catalogue.hostOption).requestBody;
    const form = hostOption.content['application/x-www-form-urlencoded'].schema;
    // The spec's placement: hostid and name in the query, only value in the form body; value may
    // come in the query too, so the body is optional, but one that is sent holds it.
    expect(hostOption.required).toBe(false);
    expect(hostOption.description).toContain('Required, in the form or the query: `value`.');
    expect(form.required).toEqual(['value']);
    expect(Object.keys(form.properties)).toEqual(['value']);
    expect(operationOf(catalogue.hostOption).parameters).toMatchObject([
      { name: 'hostid', in: 'query', required: true, schema: { type: 'integer' } },
      { name: 'name', in: 'query', required: true, schema: { type: 'string' } },
    ]);
    expect(operationOf(catalogue.hostOption).parameters).toHaveLength(2);
  });

  it('documents the plain-text and JSON error answers where they can happen', () => {
    const put = operationOf(catalogue.datafilePut).responses;
    expect(Object.keys(put)).toEqual(['200', '400', '401', '403', '412', '500', '503']);
    expect(resolve(put[401]).content['text/plain'].example).toBe('Operation only available to registered users');
    expect(resolve(put[401]).headers['WWW-Authenticate']).toBeDefined();
    expect(resolve(put[403]).content['text/plain'].example).toBe(
      'Operation only available through a secure connection (https)',
    );
    expect(resolve(put[412]).content['text/plain'].example).toBe('Missing parameter: id');
    expect(resolve(put[400]).content['text/plain'].schema).toEqual({ type: 'string' });
    expect(resolve(resolve(put[500]).content['application/json'].schema)).toEqual({
      type: 'object',
      properties: { status: { type: 'string', const: 'error' }, message: { type: 'string' } },
      required: ['status', 'message'],
      additionalProperties: false,
    });
    expect(Object.keys(operationOf(catalogue.version).responses)).toEqual(['200', '403', '500']);
    expect(Object.keys(operationOf(catalogue.destinationTypeList).responses)).toEqual([
      '200',
      '401',
      '403',
      '500',
      '503',
    ]);
    expect(operationOf(catalogue.metadataPut).responses[413]).toBeDefined();
    const answer = resolve(operationOf(catalogue.metadataGet).responses[200].content['application/json'].schema);
    expect(answer.properties.success).toEqual({ type: 'string', const: 'yes' });
    expect(resolve(answer.properties.includeInNotes)).toBeDefined();
  });

  it('documents /healthz, /metrics, /openapi.json and /docs', () => {
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    expect(doc.paths['/metrics'].get.tags).toEqual(['metrics']);
    expect(doc.paths['/docs'].get.responses[200].content['text/html']).toBeDefined();
  });
});

describe('serving the document and the page', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it('/openapi.json is the generated document, without credentials, over HTTPS only', async () => {
    const r = await h.call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    // The harness serves the default base path too, as the shells do.
    expect(r.json).toEqual(JSON.parse(JSON.stringify(servedDocument({ base: '/ecpds', mount: null }))));
    expect((await h.call('GET', '/openapi.json', { scheme: 'http' })).status).toBe(403);
  });

  it('/docs is one page with its own script and style only, allowed by hash', async () => {
    const r = await h.call('GET', '/docs');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    expect(r.text).not.toMatch(/<(script|link|img|iframe)\b[^>]*\s(src|href)=/i);
    expect(DOCS_STYLE).not.toMatch(/@import|url\(/i);
    expect(r.text).toContain(DOCS_SCRIPT);
    const hash = (t: string) => `'sha256-${createHash('sha256').update(t).digest('base64')}'`;
    const policy = r.headers.get('content-security-policy')!;
    expect(policy).toContain(`script-src ${hash(DOCS_SCRIPT)}`);
    expect(policy).toContain(`style-src ${hash(DOCS_STYLE)}`);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(() => new Function(DOCS_SCRIPT)).not.toThrow();
    expect((await h.call('GET', '/docs', { scheme: 'http' })).status).toBe(403);
    // The contact of the document is this page, wherever the document was served from.
    expect((await h.call('GET', doc.info.contact.url)).text).toBe(r.text);
  });
});

describe('the documented bounds are the ones the server enforces', () => {
  let h: Harness;
  let admin: string;
  beforeAll(async () => {
    h = await createHarness();
    admin = await h.client('admin', ['.*']);
  });
  afterAll(() => h.close());

  // Records the samples name need not exist: a business error (500) is not a refused value (400).
  const samples = operationSamples({
    destination: 'NOWHERE',
    source: '/nowhere/file.bin',
    hostid: 987654,
    sizedFile: 987654,
    deletedFile: 987654,
    incomingToDelete: 'nobody',
    webToDelete: 'nobody',
    associated: 'nobody',
    unassociated: 'nobody',
  });
  type Bounded = { id: OperationId; name: string; schema: any };
  const bounded: Bounded[] = entries.flatMap(([id, op]) => {
    const o = operationOf(op);
    const form = o.requestBody?.content['application/x-www-form-urlencoded']?.schema.properties ?? {};
    const all = [...(o.parameters ?? []), ...Object.entries(form).map(([name, schema]) => ({ name, schema }))];
    return all
      .filter((p: any) => ['minimum', 'maximum', 'minLength', 'maxLength'].some((k) => k in p.schema))
      .map((p: any) => ({ id, name: p.name, schema: p.schema }));
  });
  /** The values at each documented bound, and the ones just past it (all exact as doubles). */
  const limits = ({ schema }: Bounded): string[][] =>
    schema.type === 'integer'
      ? [
          [String(schema.minimum), String(schema.minimum - 1)],
          [String(schema.maximum), String(schema.maximum + 1)],
        ]
      : [
          ...(schema.minLength > 1 ? [['a'.repeat(schema.minLength), 'a'.repeat(schema.minLength - 1)]] : []),
          ...('maxLength' in schema ? [['a'.repeat(schema.maxLength), 'a'.repeat(schema.maxLength + 1)]] : []),
        ];
  /** The operation's sample with one field changed, each field where the document places it. */
  const send = ({ id, name }: Bounded, value: string) => {
    const op: Operation = catalogue[id];
    const sample = samples[id];
    const fields: Record<string, string> = { ...sample.params, ...sample.form, [name]: value };
    const formSchema = operationOf(op).requestBody?.content['application/x-www-form-urlencoded']?.schema;
    const inForm = (field: string) => field in (formSchema?.properties ?? {});
    const pick = (where: boolean) => Object.fromEntries(Object.entries(fields).filter(([k]) => inForm(k) === where));
    const url = samplePath(op.path, { params: pick(false) });
    return h.call(op.method, url, { auth: admin, body: sample.body, form: formSchema ? pick(true) : undefined });
  };

  it('covers the ranges the handlers check', () => {
    expect(bounded.map((b) => `${b.id}.${b.name}`)).toEqual(
      expect.arrayContaining(['datafilePut.priority', 'incomingUserAdd.id', 'webUserAdd.id', 'hostOption.hostid']),
    );
  });

  it('accepts a value at each bound and refuses one just past it, naming the parameter', async () => {
    for (const b of bounded) {
      for (const [at, past] of limits(b)) {
        const accepted = await send(b, at!);
        expect(accepted.status, `${b.id} ${b.name}=${at!.slice(0, 20)}: ${accepted.text}`).not.toBe(400);
        const refused = await send(b, past!);
        expect([refused.status, refused.text.startsWith(`Invalid value for parameter ${b.name}:`)], b.id).toEqual([
          400,
          true,
        ]);
      }
    }
  });
});

// The handlers, typed as their services return: checked against the documented answers below.
const served = {
  version: system.version,
  incomingUserAdd: incomingUsers.add,
  incomingUserAdd2: incomingUsers.add2,
  incomingUserList: incomingUsers.list,
  incomingUserDel: incomingUsers.del,
  incomingCategoryAdd: incomingUsers.addCategories,
  incomingAssociationAdd: incomingUsers.addAssociation,
  incomingAssociationDel: incomingUsers.removeAssociation,
  incomingAssociationList: incomingUsers.listAssociations,
  webUserAdd: webUsers.add,
  webUserAdd2: webUsers.add2,
  webUserList: webUsers.list,
  webUserDel: webUsers.del,
  destinationList: destinations.list,
  destinationGet: destinations.get,
  destinationTypeList: destinations.types,
  destinationCountryList: destinations.countries,
  destinationOption: destinations.setOption,
  metadataFields: metadata.fields,
  metadataGet: metadata.get,
  metadataPut: metadata.put,
  backupList: backups.list,
  backupGet: backups.get,
  backupPut: backups.put,
  hostOption: hosts.setHostOption,
  monitoringSummary: monitoring.summary,
  monitoringSummaryProduct: monitoring.summaryProduct,
  monitoringSummaryCycle: monitoring.summaryCycle,
  monitoringHistory: monitoring.history,
  datafilePut: datafiles.put,
  datafileSize: datafiles.size,
  datafileDel: datafiles.del,
} satisfies Record<OperationId, unknown>;
// Backups and metadata values are built from key lists, typed loosely, and the destination list
// and type list are JSON text rendered ahead; the run below checks them.
type Loose = 'backupList' | 'backupGet' | 'metadataGet' | 'destinationList' | 'destinationTypeList';
type Undocumented = {
  [K in Exclude<OperationId, Loose>]: Awaited<ReturnType<(typeof served)[K]>> extends z.input<
    (typeof catalogue)[K]['answer']
  >
    ? never
    : K;
}[Exclude<OperationId, Loose>];
const everyAnswerTyped: [Undocumented] extends [never] ? true : false = true;

describe('the documented answers are the real ones', () => {
  let h: Harness;
  let admin: string;
  let root: string;
  beforeAll(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-openapi-'));
    fs.writeFileSync(path.join(root, 'fc.grib'), 'x'.repeat(1234));
    h = await createHarness({ sourceRoots: [root] });
    admin = await h.client('admin', ['.*']);
    await loadDemoData(h.ports);
    const at = (iso: string) => new Date(iso);
    for (const code of ['INIT', 'DONE']) {
      await monitoring.ingest(h.ports, {
        product: 'Smoke',
        time: '00',
        step: 1,
        type: 'fc',
        buffer: 0,
        code,
        productTime: at('2025-03-10T00:00:00Z'),
        scheduledTime: at('2025-03-10T06:00:00Z'),
        at: at(code === 'INIT' ? '2025-03-10T03:00:00Z' : '2025-03-10T05:00:00Z'),
      });
    }
  });
  afterAll(async () => {
    await h.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it("the type of every handler fits its documented answer; the typed envelopes are the catalogue's", () => {
    expect(everyAnswerTyped).toBe(true);
    const typedAsSuccess: SuccessEnvelopeId[] = ['metadataFields', 'metadataGet', 'metadataPut'];
    expect(entries.filter(([, op]) => op.envelope === 'success').map(([id]) => id)).toEqual(typedAsSuccess);
    for (const id of Object.keys(catalogue) as OperationId[]) expect(served[id], id).toBe(handlers[id]);
  });

  it('every operation answers exactly the documented shape', async () => {
    const seen = new Set<OperationId>();
    const call = async (
      id: OperationId,
      method: string,
      url: string,
      opts: { body?: unknown; form?: Record<string, string> } = {},
    ) => {
      const r = await h.call(method, url, { auth: admin, ...opts });
      expect(r.status, `${id}: ${r.text}`).toBe(200);
      const op: Operation = catalogue[id];
      const shape = z.strictObject({ ...envelopes[op.envelope].shape, ...op.answer.shape });
      const parsed = shape.safeParse(r.json);
      expect(parsed.success ? 'ok' : `${id}: ${JSON.stringify(parsed.error.issues.slice(0, 3))}`).toBe('ok');
      seen.add(id);
      return r.json;
    };
    await call('version', 'GET', '/v1/version');
    await call(
      'incomingUserAdd',
      'POST',
      '/v1/incoming/user/add?id=jdoe&pass=pw&email=jdoe%40example.org&iso=gb&active=true',
    );
    await call('incomingUserAdd2', 'POST', '/v1/incoming/user/add2?id=feed1&email=feed%40example.org&iso=fr');
    await call('incomingCategoryAdd', 'POST', '/v1/incoming/category/add?id=jdoe', { body: ['ecpds-users'] });
    await call('incomingAssociationAdd', 'POST', '/v1/incoming/association/add?id=jdoe&destination=MO_EXETER');
    expect((await call('incomingUserList', 'GET', '/v1/incoming/user/list')).userList.length).toBeGreaterThan(1);
    expect(
      (await call('incomingAssociationList', 'GET', '/v1/incoming/association/list?id=jdoe')).associationList,
    ).toEqual(['MO_EXETER']);
    await call('incomingAssociationDel', 'DELETE', '/v1/incoming/association/del?id=jdoe&destination=MO_EXETER');
    await call('incomingUserDel', 'DELETE', '/v1/incoming/user/del/feed1');
    await call('webUserAdd', 'POST', '/v1/web/user/add?id=ops1&pass=pw&name=Operator&active=true');
    await call('webUserAdd2', 'POST', '/v1/web/user/add2?id=ops2');
    expect((await call('webUserList', 'GET', '/v1/web/user/list')).userList.length).toBeGreaterThan(0);
    await call('webUserDel', 'DELETE', '/v1/web/user/del/ops2');
    expect((await call('destinationList', 'GET', '/v1/destination/list')).destinationList.length).toBeGreaterThan(5);
    await call('destinationGet', 'GET', '/v1/destination/MO_EXETER');
    await call('destinationTypeList', 'GET', '/v1/destination/type/list');
    await call('destinationCountryList', 'GET', '/v1/destination/country/list');
    expect((await call('metadataFields', 'GET', '/v1/destination/metadata/fields')).fields.length).toBeGreaterThan(5);
    const values = await call('metadataGet', 'GET', '/v1/destination/MO_EXETER/metadata');
    await call('metadataPut', 'PUT', '/v1/destination/MO_EXETER/metadata', { body: values });
    const backup = await call('backupList', 'GET', '/v1/destination/backup?iso=gb');
    expect(backup.backup.destinations[0].associations.at(-1).host.passwd).toBeTypeOf('string');
    await call('backupGet', 'GET', '/v1/destination/backup/MO_EXETER');
    expect((await call('backupPut', 'PUT', '/v1/destination/backup', { body: backup })).message).toBe(
      'Number of Destination(s) created: 0',
    );
    await call('hostOption', 'POST', '/v1/host/option?hostid=1&name=sftp.port', { form: { value: '2222' } });
    await call('destinationOption', 'POST', '/v1/destination/option?destination=MO_EXETER&name=scheduler.lifetime', {
      form: { value: '3d' },
    });
    expect((await call('monitoringSummary', 'GET', '/v1/monitoring/summary')).stepStatusList).toHaveLength(1);
    await call('monitoringSummaryProduct', 'GET', '/v1/monitoring/summary/Smoke');
    await call('monitoringSummaryCycle', 'GET', '/v1/monitoring/summary/Smoke/00');
    expect(
      (await call('monitoringHistory', 'GET', '/v1/monitoring/summary/Smoke/00/1/fc')).stepStatusHistoryList,
    ).toHaveLength(2);
    const { id } = await call(
      'datafilePut',
      'GET',
      `/v1/datafile/put?destination=MO_EXETER&source=${encodeURIComponent(path.join(root, 'fc.grib'))}`,
    );
    expect((await call('datafileSize', 'GET', `/v1/datafile/size?id=${id}`)).size).toBe(1234);
    await call('datafileDel', 'DELETE', `/v1/datafile/del?id=${id}`);
    expect([...seen].sort()).toEqual(Object.keys(catalogue).sort());
  });

  it('marks a request body required exactly where the call fails without one', async () => {
    // Each operation with a body, called without one, every other field in the path or the query.
    const withoutBody: Partial<Record<OperationId, string>> = {
      hostOption: '/v1/host/option?hostid=1&name=sftp.port&value=2200',
      destinationOption: '/v1/destination/option?destination=MO_EXETER&name=scheduler.delay&value=1h',
      incomingCategoryAdd: '/v1/incoming/category/add?id=jdoe',
      metadataPut: '/v1/destination/MO_EXETER/metadata',
      backupPut: '/v1/destination/backup',
    };
    const withBody = entries.filter(([, op]) => op.body !== undefined).map(([id]) => id);
    expect(Object.keys(withoutBody).sort()).toEqual(withBody.sort());
    for (const [id, url] of Object.entries(withoutBody) as Array<[OperationId, string]>) {
      const r = await h.call(catalogue[id].method, url, { auth: admin });
      expect([id, r.status === 200]).toEqual([id, !operationOf(catalogue[id]).requestBody.required]);
    }
    const backup = await h.call('GET', '/v1/destination/backup', { auth: admin });
    const hosts = backup.json.backup.destinations.flatMap((d: any) => d.associations.map((a: any) => a.host));
    expect(hosts.find((host: any) => host.hostid === 1).data).toContain('sftp.port = "2200"');
  });
});
