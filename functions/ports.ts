import { createCredentialCache } from '../core/api-clients/auth.ts';
import { FAILED_AUTH_RULES, type FailedAuthRules } from '../core/api-clients/auth-throttle.ts';
import { memoryFailureLog } from '../core/api-clients/memory-failure-log.ts';
import type { FailedAuthLimits } from '../core/api-clients/ports.ts';
import type { SecretBox } from '../core/common/crypto.ts';
import type { Hashing } from '../core/common/hashing.ts';
import { createMemo } from '../core/common/memo.ts';
import type { SourceProber } from '../core/data-files/ports.ts';
import { createViewCache } from '../core/destinations/view-cache.ts';
import { httpNotePublisher } from '../core/metadata/notes.ts';
import { PortalLoginMemory } from '../core/portal/login-memory.ts';
import { QuotaLedger } from '../core/portal/quota-ledger.ts';
import type { EventSink, Logger, Mailer, Ports } from '../core/ports.ts';
import { localRetrievers } from '../core/retrieval/local-retrievers.ts';
import type { SourceHostOpener } from '../core/retrieval/ports.ts';
import type { ObjectStore } from '../core/store/ports.ts';
import type { Database } from '../db/client.ts';
import { createRepositories } from '../db/repositories/index.ts';
import { runtimeHashing } from './runtime-hashing.ts';

/**
 * What one process (one isolate on Workers) keeps across requests: verified credentials, failed
 * authentications, the portal's logins of the last moment and its running downloads and uploads, reference data
 * and rendered lists.
 * Never a database client or a request's I/O.
 */
export type ProcessState = Pick<
  Ports,
  'credentialCache' | 'failedAuth' | 'portalLogins' | 'portalDownloads' | 'portalUploads' | 'memo' | 'views'
>;

export interface ProcessStateOptions {
  /** Other failed-authentication rules than the production ones (tests). */
  failedAuthRules?: Partial<FailedAuthRules>;
  /** How a wrong answer is slowed (tests record it instead). */
  sleep?: FailedAuthLimits['sleep'];
}

export function createProcessState(options: ProcessStateOptions = {}): ProcessState {
  return {
    credentialCache: createCredentialCache(crypto.getRandomValues(new Uint8Array(32))),
    failedAuth: {
      rules: { ...FAILED_AUTH_RULES, ...options.failedAuthRules },
      apiLog: memoryFailureLog(),
      sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    },
    portalLogins: new PortalLoginMemory(crypto.getRandomValues(new Uint8Array(32))),
    portalDownloads: new QuotaLedger(),
    portalUploads: new QuotaLedger(),
    memo: createMemo(),
    views: createViewCache(),
  };
}

export interface PortsOptions {
  db: Database;
  state: ProcessState;
  secrets: SecretBox;
  logger: Logger;
  events: EventSink;
  sources: SourceProber;
  waitUntil: Ports['waitUntil'];
  /** Where destination notes are pushed after a metadata change; none when not configured. */
  notes?: { url: string; token: string | null } | null;
  /**
   * The time leases and due times are judged by: the shells give the database's (see
   * core/common/database-clock.ts), tests their own; this process's wall clock when left out.
   */
  clock?: () => Date;
  /** Tells this process's mover there is work; movers elsewhere find it by polling. */
  wakeMovers?: () => void;
  /** Sends the portal's e-mails (ECPDS_SMTP_URL); without it, self-service registration is unavailable. */
  mailer?: Mailer | null;
  /** Where files are retrieved to (core/store/ports.ts); without it, sources are read at each send. */
  store?: ObjectStore | null;
  /** Reads paths on destinations' Source hosts, given the ports it may use; none when left out. */
  sourceHosts?: ((ports: Ports) => SourceHostOpener) | null;
  /** scrypt and file digests; node:crypto when the runtime has it, JavaScript otherwise, when left out. */
  hashing?: Hashing;
}

// Found once: shells that build ports per request (Workers) look the runtime's crypto up only once.
let runtimeDefault: Hashing | null = null;

/** The one place core's ports are put together: the Node shell, the Workers shell and the tests all build them here. */
export function createPorts(options: PortsOptions): Ports {
  const { db, state, notes, clock, wakeMovers, mailer, store, sourceHosts, hashing, ...given } = options;
  const ports: Ports = {
    ...state,
    ...given,
    repos: createRepositories(db),
    clock: clock ?? (() => new Date()),
    hashing: hashing ?? (runtimeDefault ??= runtimeHashing()),
    wakeMovers: wakeMovers ?? (() => {}),
    mailer: mailer ?? null,
    store: store ?? null,
    localRetrievers: localRetrievers(),
    notes: notes ? httpNotePublisher(notes.url, notes.token) : null,
    sourceHosts: null,
  };
  if (sourceHosts) ports.sourceHosts = sourceHosts(ports);
  return ports;
}

/**
 * Work handed over to finish after the response: a failure is logged, never thrown, and
 * `settled()` waits for what is still running (before the database closes).
 */
export function backgroundWork(logger: Logger, handOver: (work: Promise<unknown>) => void = () => {}) {
  const pending = new Set<Promise<unknown>>();
  return {
    waitUntil(work: Promise<unknown>) {
      const tracked = work
        .catch((e: unknown) =>
          logger.error('background work failed', { reason: e instanceof Error ? e.message : String(e) }),
        )
        .finally(() => pending.delete(tracked));
      pending.add(tracked);
      handOver(tracked);
    },
    settled: () => Promise.allSettled([...pending]),
  };
}
