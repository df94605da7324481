import type { InputOf, OperationId } from '../catalogue.ts';
import type { Ctx } from '../ports.ts';

export type Args<K extends OperationId> = { ctx: Ctx; input: InputOf<K> };
/** A handler returns the keys of its answer; the transport adds the envelope. */
export type Handler<K extends OperationId> = (args: Args<K>) => Promise<Record<string, unknown>>;
