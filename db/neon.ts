import { neonConfig, Pool } from '@neondatabase/serverless';
import { drizzle } from 'drizzle-orm/neon-serverless';
import type { Database, DbHandle } from './client.ts';
import * as schema from './schema.ts';

export interface NeonOptions {
  max?: number;
  /**
   * Where the WebSocket proxy in front of Postgres is, `host:port/path` (Neon's own when unset);
   * with `secure: false` spoken over ws:// rather than wss:// (a proxy on loopback).
   */
  wsProxy?: string;
  secure?: boolean;
  /** The WebSocket class, where the runtime has none of its own (Node 20). */
  webSocket?: typeof neonConfig.webSocketConstructor;
}

/**
 * Postgres over a WebSocket (Neon's serverless driver), for runtimes that open no TCP connection
 * (Workers without Hyperdrive, Deno Deploy, Vercel's edge): the same statements, transactions included,
 * through a proxy that carries Postgres's own protocol. No LISTEN/NOTIFY: movers poll.
 */
export function openNeon(url: string, options: NeonOptions = {}): DbHandle {
  if (options.webSocket) neonConfig.webSocketConstructor = options.webSocket;
  if (options.wsProxy !== undefined) {
    const proxy = options.wsProxy;
    neonConfig.wsProxy = () => proxy;
  }
  if (options.secure === false) {
    neonConfig.useSecureWebSocket = false;
    // Without TLS the password is not sent ahead of the server's request for it.
    neonConfig.pipelineTLS = false;
    neonConfig.pipelineConnect = false;
  }
  const pool = new Pool({ connectionString: url, max: options.max ?? 10 });
  // An idle client whose connection ends (a restart, a dropped session) is discarded by the pool; left
  // without a listener, its error would end the process. The next query opens another.
  pool.on('error', () => {});
  const db = drizzle({ client: pool, schema });
  namePerText((db as unknown as { session: NamedSession }).session);
  return { db: db as unknown as Database, kind: 'postgres', close: () => pool.end() };
}

interface NamedSession {
  prepareQuery(query: { sql: string }, fields: unknown, name: string | undefined, ...rest: unknown[]): unknown;
}

/**
 * A statement's name is what postgres.js ignores (it keys prepared statements by their text) and the
 * node-postgres protocol Neon speaks requires to be one text's: a name given to statements of several
 * shapes (a list of n ids) is made one per text.
 */
function namePerText(session: NamedSession) {
  const prepare = session.prepareQuery.bind(session);
  session.prepareQuery = (query, fields, name, ...rest) =>
    prepare(query, fields, name === undefined ? undefined : `${name}_${textHash(query.sql)}`, ...rest);
}

/** FNV-1a, 32 bits: short names, and a clash only between texts that would have shared one name anyway. */
function textHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(36);
}
