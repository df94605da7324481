import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue, type Operation, type OperationId } from '../core/catalogue.ts';
import { inFormBody } from '../core/common/operation.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { scaled } from './support/time.ts';

// A client generated from the served document with the usual tools must be able to call every
// operation with the parameters the catalogue says it takes, where the catalogue says they go.

let h: Harness;
let dir: string;
beforeAll(async () => {
  h = await createHarness();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-openapi-client-'));
  // The temp client resolves openapi-fetch from this project's own dependencies.
  fs.symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
});
afterAll(async () => {
  fs.rmSync(dir, { recursive: true, force: true });
  await h.close();
});

type Schema = { type?: string; enum?: unknown[] };

/** A value of the parameter's documented wire type; the type checker, not a server, judges it. */
const sampleOf = (schema: Schema | undefined) =>
  schema?.enum
    ? JSON.stringify(schema.enum[0])
    : schema?.type === 'integer'
      ? '1'
      : schema?.type === 'boolean'
        ? 'true'
        : "'x'";

/** One call of the operation through openapi-fetch, with every input field of the catalogue entry. */
function callOf(id: OperationId, op: Operation, doc: any): string {
  const documented = doc.paths[op.path]?.[op.method.toLowerCase()] ?? {};
  const parameters: Array<{ name: string; in: string; schema: Schema }> = documented.parameters ?? [];
  const formSchema = documented.requestBody?.content?.['application/x-www-form-urlencoded']?.schema;
  const inPath = new Set([...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!));
  const pathParams: string[] = [];
  const query: string[] = [];
  const form: string[] = [];
  for (const name of Object.keys(op.input.shape)) {
    if (name === 'body') continue;
    const schema = parameters.find((p) => p.name === name)?.schema ?? formSchema?.properties?.[name];
    const entry = `${JSON.stringify(name)}: ${sampleOf(schema)}`;
    if (inPath.has(name)) pathParams.push(entry);
    else if (inFormBody(op, name)) form.push(entry);
    else query.push(entry);
  }
  const params = [
    pathParams.length > 0 && `path: { ${pathParams.join(', ')} }`,
    query.length > 0 && `query: { ${query.join(', ')} }`,
  ].filter(Boolean);
  const where = `${JSON.stringify(op.path)}, ${JSON.stringify(op.method.toLowerCase())}`;
  const body = op.body === 'form' ? `{ ${form.join(', ')} }` : op.body === 'json' ? `jsonBodyOf(${where})` : undefined;
  const init = [params.length > 0 && `params: { ${params.join(', ')} }`, body && `body: ${body}`].filter(Boolean);
  return `  // ${id}\n  await client.${op.method}(${JSON.stringify(op.path)}, { ${init.join(', ')} });`;
}

function typeErrors(files: Record<string, string>): string[] {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  const program = ts.createProgram([path.join(dir, 'client.ts')], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    types: [],
    skipLibCheck: true,
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
    .map((m) => m.slice(0, 400));
}

describe('a client generated with openapi-typescript and openapi-fetch', () => {
  it(
    'type-checks a call of every catalogue operation with its parameters where the catalogue puts them',
    async () => {
      const doc = (await h.call('GET', '/openapi.json')).json;
      const schema = astToString(await openapiTS(doc));
      const entries = Object.entries(catalogue) as Array<[OperationId, Operation]>;
      const calls = entries.map(([id, op]) => callOf(id, op, doc));
      const client = [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './schema';",
        // A JSON body of the documented type of that operation: its shape is checked by the document's own tests.
        'type JsonBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;',
        'declare function jsonBodyOf<P extends keyof paths, M extends keyof paths[P]>' +
          '(p: P, m: M): JsonBody<paths[P][M]>;',
        "const client = createClient<paths>({ baseUrl: 'https://edge.example/ecpds' });",
        'export async function callEverything() {',
        ...calls,
        '}',
        '',
      ].join('\n');
      expect(calls).toHaveLength(entries.length);
      expect(client).toContain(
        'client.POST("/v1/host/option", { params: { query: { "hostid": 1, "name": \'x\' } }, body: { "value": \'x\' } })',
      );
      expect(typeErrors({ 'schema.d.ts': schema, 'client.ts': client })).toEqual([]);
    },
    scaled(60_000),
  );

  it(
    'refuses a call that leaves out a required parameter, or puts it in the wrong place',
    async () => {
      const doc = (await h.call('GET', '/openapi.json')).json;
      const schema = astToString(await openapiTS(doc));
      const head = [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './schema';",
        "const client = createClient<paths>({ baseUrl: 'https://edge.example' });",
      ].join('\n');
      const wrong = [
        "client.POST('/v1/host/option', { params: { query: { hostid: 1 } }, body: { value: 'x' } });",
        "client.POST('/v1/host/option', { params: { query: { hostid: 1, name: 'a' } }, body: {} });",
        "client.POST('/v1/host/option', { body: { hostid: 1, name: 'a', value: 'x' } });",
        "client.GET('/v1/destination/{name}', {});",
      ];
      for (const line of wrong) {
        expect(typeErrors({ 'schema.d.ts': schema, 'client.ts': `${head}\n${line}\n` }), line).not.toEqual([]);
      }
    },
    scaled(60_000),
  );
});
