import { z } from 'zod';
import type { InputOf, OperationId } from '../catalogue.ts';
import type { Ctx } from '../ports.ts';
import type { InputSchema } from './params.ts';

/**
 * One entry of the service catalogue. Each feature declares its own operations; core/catalogue.ts
 * assembles them, and routing, permission checks, the console's checkboxes, the OpenAPI document
 * and the typed client all read that one catalogue.
 */
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
/** none: no authentication; basic: valid credentials only; service: credentials + permission. */
export type Access = 'none' | 'basic' | 'service';

export interface Operation<S extends InputSchema = InputSchema, A extends AnswerSchema = AnswerSchema> {
  method: Method;
  path: string;
  service: string | null;
  access: Access;
  /** The three destination-metadata endpoints answer `success: yes` instead of `status: ok`. */
  envelope: 'status' | 'success';
  /** Where the body comes from: a JSON document (field `body`) or form fields merged into the input. */
  body?: 'json' | 'form';
  /** With a form body, the input fields it carries on the wire; the other fields are query parameters. */
  formFields?: readonly string[];
  summary: string;
  input: S;
  /** What the operation answers beside its envelope (wire-decisions §4). */
  answer: A;
  /** The documented shape of a JSON body the input leaves `unknown` because the handler checks it. */
  documentedBody?: z.ZodType;
}

export type AnswerSchema = z.ZodObject<Record<string, z.ZodType>>;

type OperationSpec = Omit<Operation, 'envelope' | 'access'> & Partial<Pick<Operation, 'envelope' | 'access'>>;
type WithDefaults<T extends OperationSpec> = T & {
  envelope: T extends { envelope: infer E } ? E : 'status';
  access: Access;
};

/**
 * An operation with the usual defaults: a `status: ok` envelope, and a permission when it names a
 * service. The entry keeps its own types, so the catalogue knows each input, answer and body.
 */
export const op = <const T extends OperationSpec>(o: T): WithDefaults<T> => {
  // A misspelt form field would silently move a field to the query of the document and the client.
  for (const name of o.formFields ?? []) {
    if (o.body !== 'form' || !(name in o.input.shape)) throw new Error(`${o.path}: ${name} is not a form field of it`);
  }
  return { envelope: 'status', access: o.service ? 'service' : 'basic', ...o } as WithDefaults<T>;
};

/** Whether this input field travels in the operation's form body (otherwise in the path or the query). */
export const inFormBody = (op: Operation, name: string) => op.body === 'form' && (op.formFields ?? []).includes(name);

/** The answer of an operation that has nothing to say beyond its envelope. */
export const noAnswer = z.strictObject({});

/** The envelopes of an answer: `status: ok`, or `success: yes` for the metadata endpoints. */
export const envelopes = {
  status: z.strictObject({ status: z.literal('ok') }),
  success: z.strictObject({ success: z.literal('yes') }),
};

export const errorBody = z.strictObject({ status: z.literal('error'), message: z.string() });

/** Kinds of nullable values in answers. */
export const nullable = { text: z.string().nullable(), int: z.int().nullable() };

export type Args<K extends OperationId> = { ctx: Ctx; input: InputOf<K> };
/** A handler returns the keys of its answer; the transport adds the envelope. */
export type Handler<K extends OperationId> = (args: Args<K>) => Promise<object>;
/** The handlers of one feature: one for each of its operations. */
export type Handlers<Operations> = { [K in keyof Operations & OperationId]: Handler<K> };

/**
 * A whole answer serialized ahead, envelope included, that the transport sends as it is: for a
 * large answer kept between requests (the destination list), where serializing again would cost
 * more than the rest of the request.
 */
export class SerializedAnswer {
  constructor(readonly body: Uint8Array) {}
}
