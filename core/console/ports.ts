import type { FailureLog } from '../api-clients/ports.ts';
import type { WebUser } from '../web-users/ports.ts';

export interface AclCategory {
  id: string;
  label: string;
  consoleAccess: boolean;
}

export interface ConsoleSession {
  userId: string;
  csrf: string;
  lastSeenAt: Date;
}

export interface AuditEntry {
  at: Date;
  actor: string;
  action: string;
  targetKind: string;
  target: string;
  detail: string | null;
}

/** What the administration console stores beyond the API's own records. */
export interface ConsoleRepo {
  categories(): Promise<AclCategory[]>;
  /** Every web user, active or not, with its categories, ordered by id. */
  webUsers(): Promise<Array<WebUser & { categories: string[] }>>;
  categoriesOf(userId: string): Promise<string[]>;
  grant(userId: string, category: string): Promise<void>;
  revoke(userId: string, category: string): Promise<boolean>;
  createSession(tokenHash: string, session: ConsoleSession): Promise<void>;
  session(tokenHash: string): Promise<ConsoleSession | null>;
  touchSession(tokenHash: string, at: Date): Promise<void>;
  deleteSession(tokenHash: string): Promise<void>;
  /**
   * Ends every session of the user. Locks the user's row first, so two sign-ins at once cannot
   * each keep a session: the later waits, then ends the earlier's.
   */
  endSessionsOf(userId: string): Promise<void>;
  /** Failed sign-ins, shared by every process on the database. */
  signInFailures: FailureLog;
  audit(entry: AuditEntry): Promise<void>;
  auditTrail(limit: number): Promise<AuditEntry[]>;
}
