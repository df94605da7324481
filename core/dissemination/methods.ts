import type { Delivered, Delivery } from './deliver.ts';
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
}

/** The file an attempt sends: its name under the host's directory and its registered size. */
export interface OutgoingFile {
  target: string;
  size: number;
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
  close(): Promise<void>;
}

export type TransferMethods = Partial<Record<MethodName, TransferMethod>>;

/** What `deliverFile` needs, from the host's options, for methods that write by name. */
export function deliveryFor(host: HostConnection, file: OutgoingFile): Delivery {
  return {
    directory: host.directory,
    target: file.target,
    registeredSize: file.size,
    temporary: host.options.temporary,
    makeDirectories: host.options.makeDirectories,
    ignoreCheck: host.options.ignoreCheck,
  };
}
