import { type PGlite, parse, protocol, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite';
import { concatBytes } from '../core/common/encoding.ts';

/** More would hold plans of statements built once (long IN lists); the least recently run goes first. */
const MAX_STATEMENTS = 500;
const CACHED = /^\s*(select|with|insert|update|delete)\b/i;

type Message = Awaited<ReturnType<PGlite['execProtocol']>>['messages'][number];
interface Statement {
  name: string;
  types: number[];
}

/**
 * PGlite parses and plans every query again, as an unnamed statement: for the put's reach of
 * destinations that was six times the cost of running it. This client keeps each data statement
 * as a named prepared statement, as postgres.js does on the server: parsed once, each later run
 * one bind and execute. Postgres re-plans a named statement itself when a table it reads changes.
 * Everything else (DDL, transaction control, options drizzle does not pass) runs as PGlite runs it.
 */
export function preparingClient(pg: PGlite): PGlite {
  const statements = new Map<string, Statement>();
  let named = 0;

  async function send(message: Uint8Array): Promise<Message[]> {
    const { messages } = await pg.execProtocol(message, { syncToFs: false, throwOnError: false });
    const error = messages.find((m) => m.name === 'error');
    if (error) throw error;
    return messages;
  }

  async function prepared(text: string): Promise<Statement> {
    const known = statements.get(text);
    if (known) {
      statements.delete(text);
      statements.set(text, known);
      return known;
    }
    const name = `s${++named}`;
    const described = await send(
      concatBytes([protocol.serialize.parse({ name, text }), protocol.serialize.describe({ type: 'S', name }), SYNC]),
    );
    const statement = { name, types: parse.parseDescribeStatementResults(described) };
    statements.set(text, statement);
    if (statements.size > MAX_STATEMENTS) await forgetOldest();
    return statement;
  }

  async function forgetOldest() {
    const [text, oldest] = statements.entries().next().value!;
    statements.delete(text);
    // Refused inside a failed transaction: the statement then stays prepared, unused.
    await send(concatBytes([protocol.serialize.close({ type: 'S', name: oldest.name }), SYNC])).catch(() => undefined);
  }

  async function run<T>(text: string, params: unknown[], options?: QueryOptions): Promise<Results<T>> {
    const statement = await prepared(text);
    const values = params.map((value, i) => serialized(pg, value, statement.types[i]!, options));
    const messages = await send(
      concatBytes([
        protocol.serialize.bind({ statement: statement.name, values }),
        protocol.serialize.describe({ type: 'P' }),
        protocol.serialize.execute({}),
        SYNC,
      ]),
    );
    return parse.parseResults(messages, pg.parsers, options)[0] as Results<T>;
  }

  const cacheable = (text: string, options?: QueryOptions) =>
    CACHED.test(text) && !options?.blob && !options?.paramTypes && !options?.onNotice;

  const query = async <T>(text: string, params: unknown[] = [], options?: QueryOptions) => {
    if (!cacheable(text, options)) return pg.query<T>(text, params, options);
    // The locks PGlite's own query takes: no other transaction, no other statement.
    const results = await pg._runExclusiveTransaction(() => pg.runExclusive(() => run<T>(text, params, options)));
    await pg.syncToFs();
    return results;
  };

  const transaction = <T>(callback: (tx: Transaction) => Promise<T>) =>
    pg.transaction((tx) =>
      callback({
        ...tx,
        get closed() {
          return tx.closed;
        },
        query: async <R>(text: string, params: unknown[] = [], options?: QueryOptions) => {
          if (!cacheable(text, options) || tx.closed) return tx.query<R>(text, params, options);
          return pg.runExclusive(() => run<R>(text, params, options));
        },
      }),
    );

  return new Proxy(pg, {
    get(target, key) {
      if (key === 'query') return query;
      if (key === 'transaction') return transaction;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const SYNC = protocol.serialize.sync();

/** As PGlite's query serializes a parameter: by the type Postgres inferred for it. */
function serialized(pg: PGlite, value: unknown, type: number, options?: QueryOptions): string | null {
  if (value === null || value === undefined) return null;
  const serializer = options?.serializers?.[type] ?? pg.serializers[type];
  return serializer ? serializer(value) : String(value);
}
