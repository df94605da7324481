import type { ListedEntry } from '../acquisition/selection.ts';
import type { Delivered, Delivery, DeliveryFilter, DeliverySteps } from './deliver.ts';
import { filterExtension } from './filters.ts';
import type { MethodName, MethodOptions } from './method-options.ts';

/** One host as a transfer method reaches it; the password is unsealed for this attempt only. */
export interface HostConnection {
  hostId: string;
  /** The host's name or address, without a port (`options.port` holds the port). */
  hostname: string;
  login: string;
  password: string | null;
  /** The target directory (`dir`); empty for the login's home directory. */
  directory: string;
  options: MethodOptions;
  /** Where a method that keeps sessions open tells its mover of them; none outside a mover. */
  sessions?: SessionLedger;
}

/**
 * The sessions a mover holds open to each host, busy or kept idle for reuse, as the other movers'
 * claims count them against the host's maxConnections. A method reports each session it opens and
 * closes; one reused costs nothing.
 */
export interface SessionLedger {
  /**
   * Before a new session to the host is opened: resolves once other movers count it. A rejection
   * means it must not be opened.
   */
  opening(hostId: string): Promise<void>;
  /** A session `opening` counted has closed at the server, or was never opened. */
  closed(hostId: string): void;
  /**
   * How much longer, from now, a session may be kept idle: what was published is only counted
   * under its lease, and must not lapse while the session is still open.
   */
  idleAllowanceMs(): number;
}

/** The file an attempt sends: its name under the host's directory and its registered size. */
export interface OutgoingFile {
  target: string;
  size: number;
  /** The attempt sending it, when a mover claimed it (a method tried on its own has none). */
  attempt?: AttemptFence;
  /** The host's compression filter when it applies to this file: `target` then gets its extension. */
  filter?: DeliveryFilter | null;
  /**
   * The MD5 hex of the bytes to send when known before sending (the stored copy's): the method
   * answers it rather than hashing the bytes again, and still counts them.
   */
  md5?: string | null;
}

/**
 * What keeps a stale attempt (its mover paused past its lease, its transfer changed) from touching
 * the live one's file: each attempt writes a temporary name of its own, removes those earlier
 * attempts may have left, and renames into place only once the database says it still owns the
 * transfer.
 */
export interface AttemptFence {
  /** Put between the file's name and the temporary suffix: `.<transfer>-<attempt>`. */
  tag: string;
  /**
   * The tags of every earlier attempt, newest first. Not only the previous one's: an attempt cut off
   * before it could remove its predecessor's file (a host that refused the connection) leaves that
   * file for the next attempt that gets through.
   */
  previousTags: string[];
  /** Rejects when the attempt no longer owns the transfer; renews its lease when it does. */
  confirm(): Promise<void>;
  /**
   * Throws once the attempt's lease may have lapsed unrenewed, as the mover's beat judges it. Asked
   * right before a file is opened or bytes go out: a mover resumed after a pause may handle what
   * was waiting for it (the rest of a source, an answer) before its beat stops the send.
   */
  throwIfLapsing(): void;
}

/** The fence of attempt `attempt` of transfer `id`; `confirm` asks the database. */
export function attemptFence(
  id: number,
  attempt: number,
  confirm: () => Promise<void>,
  throwIfLapsing: () => void = () => undefined,
): AttemptFence {
  const previousTags = Array.from({ length: attempt - 1 }, (_, i) => `.${id}-${attempt - 1 - i}`);
  return { tag: `.${id}-${attempt}`, previousTags, confirm, throwIfLapsing };
}

/**
 * A transfer method (the reference's ectrans module): sends one file to one host. It throws an
 * Error whose message says what went wrong (it becomes the transfer's comment and the ERR line's
 * Message); `signal` aborts the send (a delete, a stop, a lost lease, a timeout) and must close
 * the stream. Methods may keep idle sessions for reuse; `close` ends them.
 */
export interface TransferMethod {
  send(
    host: HostConnection,
    file: OutgoingFile,
    source: AsyncIterable<Uint8Array>,
    signal: AbortSignal,
  ): Promise<Delivered>;
  /**
   * Reads a file from the host (a destination's Source host, at retrieval): `path` is absolute, or
   * relative to the login's home. The size is what the server says before the first byte, null when
   * it says none; `signal` aborts the read and must close the stream. Methods that cannot read have none.
   */
  fetch?(host: HostConnection, path: string, signal: AbortSignal): Promise<FetchedFile>;
  /**
   * Lists a directory of the host (an Acquisition host's), without going down into its directories:
   * `directory` is absolute, or relative to the login's home. Methods that cannot list have none.
   */
  list?(host: HostConnection, directory: string, signal: AbortSignal): Promise<ListedEntry[]>;
  /**
   * A host check (core/host-checks): connects and logs in on a session of its own (an idle one kept
   * for sends would prove nothing), and with `file` writes its bytes under the host's directory then
   * removes it; answers what it did, in words. Methods without one are checked by a send or a listing.
   */
  check?(host: HostConnection, file: CheckFile | null, signal: AbortSignal): Promise<string>;
  close(): Promise<void>;
}

/** What a host check writes, under the host's directory, and removes again. */
export interface CheckFile {
  name: string;
  bytes: Uint8Array;
}

/** A file a method reads from a host. */
export interface FetchedFile {
  size: number | null;
  stream: AsyncIterable<Uint8Array>;
}

export type TransferMethods = Partial<Record<MethodName, TransferMethod>>;

/** What `deliverFile` needs, from the host's options, for methods that write by name. */
export function deliveryFor(host: HostConnection, file: OutgoingFile, steps?: DeliverySteps): Delivery {
  const filter = file.filter ?? null;
  return {
    directory: host.directory,
    target: filter ? `${file.target}${filterExtension(filter.name)}` : file.target,
    registeredSize: file.size,
    knownMd5: file.md5 ?? null,
    temporary: host.options.temporary,
    makeDirectories: host.options.makeDirectories,
    ignoreCheck: host.options.ignoreCheck,
    fence: file.attempt,
    sidecarExtension: host.options.extras.sidecarExtension,
    filter,
    steps,
  };
}
