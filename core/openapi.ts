import { z } from 'zod';
import { catalogue, namedShapes, type OperationId } from './catalogue.ts';
import { envelopes, errorBody, inFormBody, type Operation } from './common/operation.ts';
import { param } from './common/params.ts';
import { PRODUCT, VERSION } from './system/version.ts';

/**
 * The OpenAPI 3.1 document of the API, generated from the catalogue and its zod schemas so
 * that it cannot drift from what the app routes and checks.
 */
type Json = Record<string, unknown>;

export interface OpenApiOptions {
  /** Routes the app serves beside the catalogue (health, metrics, docs), as OpenAPI path items. */
  extraPaths?: Record<string, Json>;
  /** Where the paths are served, the first the default of a client; `/` when left out. */
  servers?: Array<{ url: string; description?: string }>;
}

const JSON_SCHEMA = { unrepresentable: 'any', target: 'draft-2020-12' } as const;
const schemaOf = (s: z.ZodType, io: 'input' | 'output') => clean(z.toJSONSchema(s, { ...JSON_SCHEMA, io }) as Json);

function clean(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

// Query values are strings on the wire; these two patterns mark the integer and boolean parameters.
const INT_PATTERN = schemaOf(param.int(), 'input').pattern;
const BOOL_PATTERN = schemaOf(param.bool(), 'input').pattern;

/** The messages of a schema's checks: the "what was expected" part of its 400 answers. */
function expectations(schema: z.ZodType): string[] {
  const found = new Set<string>();
  const visit = (s: unknown) => {
    const def = (s as { _zod?: { def?: ZodDefLike } } | undefined)?._zod?.def;
    if (!def) return;
    const own = def.error?.({});
    if (typeof own === 'string') found.add(own);
    for (const check of def.checks ?? []) {
      const message = check._zod.def.error?.({});
      if (typeof message === 'string') found.add(message);
    }
    visit(def.innerType);
    visit(def.in);
    visit(def.out);
  };
  visit(schema);
  return [...found];
}
type ZodDefLike = {
  error?: (issue: object) => unknown;
  checks?: Array<{ _zod: { def: { error?: (issue: object) => unknown } } }>;
  innerType?: unknown;
  in?: unknown;
  out?: unknown;
};

/** How a parameter travels: its wire type, whether it is required, what a valid value is. */
interface WireParameter {
  name: string;
  schema: Json;
  required: boolean;
  description?: string;
}

function wireParameter(name: string, field: z.ZodType): WireParameter {
  const required = !field.safeParse(undefined).success;
  const raw = schemaOf(field, 'input');
  // An integer's bounds are checks of the number it becomes: the output side of its schema.
  const schema =
    raw.pattern === INT_PATTERN ? schemaOf(field, 'output') : raw.pattern === BOOL_PATTERN ? { type: 'boolean' } : raw;
  const expected = expectations(field);
  return { name, schema, required, ...(expected.length > 0 && { description: expected.join('; ') }) };
}

/**
 * A form body. Its fields may come in the query instead, so the body itself is optional (a
 * validator would otherwise refuse a call that sends them there); one that is sent holds them.
 */
function formBody(fields: WireParameter[]): Json {
  const required = fields.filter((p) => p.required).map((p) => p.name);
  return {
    required: false,
    description:
      'Form fields; each may also be given as a query parameter (the form wins), so the body may be left out.' +
      (required.length > 0
        ? ` Required, in the form or the query: ${required.map((n) => `\`${n}\``).join(', ')}.`
        : ''),
    content: {
      'application/x-www-form-urlencoded': {
        schema: {
          type: 'object',
          properties: Object.fromEntries(
            fields.map((p) => [p.name, { ...p.schema, ...(p.description && { description: p.description }) }]),
          ),
          required,
        },
      },
    },
  };
}

const pathNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
const tagOf = (op: Operation) => op.service ?? op.access;
const ref = (kind: 'schemas' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

function operationObject(id: OperationId, op: Operation): Json {
  const inPath = new Set(pathNames(op.path));
  const fields = Object.entries(op.input.shape).filter(([name]) => name !== 'body');
  const wire = fields.map(([name, field]) => wireParameter(name, field));
  const parameters = wire
    .filter((p) => !inFormBody(op, p.name))
    .map((p) => ({
      name: p.name,
      in: inPath.has(p.name) ? 'path' : 'query',
      required: inPath.has(p.name) || p.required,
      schema: p.schema,
      ...(p.description && { description: p.description }),
    }));
  const formFields = wire.filter((p) => inFormBody(op, p.name));
  const bodyField = op.input.shape.body;
  const documented = op.documentedBody;

  const requestBody =
    op.body === 'json' && bodyField
      ? {
          required: documented !== undefined || !bodyField.safeParse(undefined).success,
          content: {
            'application/json': { schema: documented ? ref('schemas', `${id}Body`) : schemaOf(bodyField, 'input') },
          },
        }
      : op.body === 'form'
        ? formBody(formFields)
        : undefined;

  const malformable =
    op.body !== undefined ||
    wire.some(
      (p) => p.description !== undefined || p.schema.type !== 'string' || 'pattern' in p.schema || 'enum' in p.schema,
    );
  const responses: Json = {
    200: { description: 'Success', content: { 'application/json': { schema: ref('schemas', `${id}Answer`) } } },
    ...(malformable && { 400: ref('responses', 'BadRequest') }),
    ...(op.access !== 'none' && { 401: ref('responses', 'Unauthenticated') }),
    403: ref('responses', 'NotSecure'),
    ...(wire.some((p) => p.required || inPath.has(p.name)) && { 412: ref('responses', 'MissingParameter') }),
    ...(op.body && { 413: ref('responses', 'TooLarge') }),
    500: ref('responses', 'ServiceError'),
    ...(op.access !== 'none' && { 503: ref('responses', 'Unavailable') }),
  };
  const permission =
    op.access === 'service'
      ? `Permission \`${op.service}\`.`
      : op.access === 'basic'
        ? 'Valid credentials, no permission.'
        : 'No authentication.';
  return {
    operationId: id,
    summary: op.summary,
    description: `${permission}${op.envelope === 'success' ? ' Answers `success: yes` instead of `status: ok`.' : ''}`,
    tags: [tagOf(op)],
    security: op.access === 'none' ? [] : [{ basic: [] }],
    ...(parameters.length > 0 && { parameters }),
    ...(requestBody && { requestBody }),
    responses,
  };
}

const text = (description: string, example: string, headers?: Json) => ({
  description,
  ...(headers && { headers }),
  content: { 'text/plain': { schema: { type: 'string' }, example } },
});
const jsonError = (description: string, example: string) => ({
  description,
  content: { 'application/json': { schema: ref('schemas', 'Error'), example: { status: 'error', message: example } } },
});

/** The shapes of components.schemas: named shapes, each operation's answer and documented bodies. */
function componentSchemas(): Json {
  const outputs = z.registry<{ id: string }>();
  for (const [name, shape] of Object.entries(namedShapes)) outputs.add(shape, { id: name });
  outputs.add(errorBody, { id: 'Error' });
  const inputs = z.registry<{ id: string }>();
  for (const [id, op] of Object.entries(catalogue) as Array<[OperationId, Operation]>) {
    outputs.add(z.strictObject({ ...envelopes[op.envelope].shape, ...op.answer.shape }), { id: `${id}Answer` });
    if (op.documentedBody) inputs.add(op.documentedBody, { id: `${id}Body` });
  }
  const uri = (id: string) => `#/components/schemas/${id}`;
  const out = z.toJSONSchema(outputs, { ...JSON_SCHEMA, io: 'output', uri }).schemas as Record<string, Json>;
  const ins = z.toJSONSchema(inputs, { ...JSON_SCHEMA, io: 'input', uri }).schemas as Record<string, Json>;
  return Object.fromEntries(Object.entries({ ...out, ...ins }).map(([name, schema]) => [name, clean(schema)]));
}

export function openApiDocument(options: OpenApiOptions = {}): Json {
  const paths: Record<string, Json> = {};
  for (const [id, op] of Object.entries(catalogue) as Array<[OperationId, Operation]>) {
    (paths[op.path] ??= {})[op.method.toLowerCase()] = operationObject(id, op);
  }
  const allPaths = { ...paths, ...options.extraPaths };
  const used = Object.values(allPaths).flatMap((item) =>
    Object.values(item).flatMap((o) => (o as { tags?: string[] }).tags ?? []),
  );
  const tags = [...new Set(used)].map((name) => ({
    name,
    description:
      name === 'none'
        ? 'No authentication'
        : name === 'basic'
          ? 'Valid credentials, no permission'
          : `Permission ${name}`,
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: `${PRODUCT} Data Dissemination Service REST API`,
      version: VERSION,
      // The project grants no licence (package.json is private and names none): say so rather than leave it blank.
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      // Relative, so it names the deployment that serves this document: its own documentation page.
      contact: { name: `${PRODUCT} Data Dissemination Service`, url: '/docs' },
      description:
        'Every call uses HTTPS (plain HTTP is answered 403) and, except GET /v1/version, ' +
        'HTTP Basic credentials of an API client. ' +
        "A service is allowed when one of the client's permission expressions matches its whole name " +
        '(the tag of each operation). ' +
        'Order of checks: HTTPS (403), Authorization syntax (401), required parameters (412), parameter types (400), ' +
        'credentials and permission (500 `User not authorized`).',
    },
    servers: options.servers ?? [{ url: '/' }],
    security: [{ basic: [] }],
    tags,
    paths: allPaths,
    components: {
      securitySchemes: { basic: { type: 'http', scheme: 'basic', description: 'API client username and secret' } },
      schemas: componentSchemas(),
      responses: {
        BadRequest: text(
          'A malformed value (integer, boolean, pattern, enum, JSON body)',
          "Invalid value for parameter type: 'abc' (integer expected)",
        ),
        Unauthenticated: text(
          'Missing or malformed Authorization header',
          'Operation only available to registered users',
          {
            'WWW-Authenticate': { schema: { type: 'string' }, description: `Basic realm="${PRODUCT}"` },
          },
        ),
        NotSecure: text(
          'The request did not use HTTPS',
          'Operation only available through a secure connection (https)',
        ),
        MissingParameter: text('A required parameter is missing or blank', 'Missing parameter: id'),
        TooLarge: text(
          'The request body is larger than the configured limit',
          'Request body larger than 10485760 bytes',
        ),
        ServiceError: jsonError(
          'A service error, including a refused permission (the same answer for an unknown client or a wrong secret)',
          'User not authorized',
        ),
        Unavailable: jsonError('The database is unreachable', 'Service unavailable: database unreachable'),
      },
    },
  };
}
