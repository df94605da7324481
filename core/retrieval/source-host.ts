import type { MethodName } from '../dissemination/method-options.ts';
import type { TransferMethods } from '../dissemination/methods.ts';
import { connectionTo, failureMessage } from '../dissemination/send.ts';
import type { Ports } from '../ports.ts';
import type { AcquiredReader, RetrievalRepo, RetrievalSource, SourceHost, SourceHostOpener } from './ports.ts';

/**
 * The reference's Source host: a destination that names one (`hostForSourceName`) has the sources
 * put to it read from that host, with the host's transfer method, login and (unsealed for this read
 * only) password; a relative path lies under the host's directory. Whatever the method or the
 * server answers reaches the reason without the host's credentials.
 */
export function sourceHostOpener(
  ports: Ports,
  repo: Pick<RetrievalRepo, 'sourceHostOf' | 'hostById'>,
  methods: TransferMethods,
  acquired?: AcquiredReader,
): SourceHostOpener {
  async function read(host: SourceHost, role: string, path: string, signal: AbortSignal): Promise<RetrievalSource> {
    if (!host.active) throw new Error(`${role} ${host.hostId} is not active`);
    const protocol = host.module ?? 'none';
    const fetcher = methods[protocol as MethodName];
    if (!fetcher?.fetch) throw new Error(`Transfer method ${protocol} cannot read from ${role} ${host.hostId}`);
    const { connection, secrets } = await connectionTo(ports, host, protocol as MethodName);
    // An Acquisition host's directory field holds its listing lines: the paths listed are whole.
    const where = role === ACQUISITION_HOST ? path : onHost(connection.directory, path);
    try {
      const { size, stream } = await fetcher.fetch(connection, where, signal);
      return { size, stream: scrubbed(stream, secrets), host: sourceOf(host, protocol) };
    } catch (error) {
      throw new Error(`${where} on ${role} ${host.hostId}: ${failureMessage(error, secrets)}`);
    }
  }
  return {
    async open(destination, path, signal) {
      const named = await repo.sourceHostOf(destination);
      if (!named) return null;
      if (!named.host) throw new Error(`Source host ${named.name} of ${destination} not found`);
      return read(named.host, 'Source host', path, signal);
    },
    async openOn(hostId, path, signal) {
      const host = await repo.hostById(hostId);
      if (!host) throw new Error(`Acquisition host ${hostId} not found`);
      if (acquired?.reads(host)) return acquired.open(host, path, signal);
      return read(host, ACQUISITION_HOST, path, signal);
    },
  };
}

const ACQUISITION_HOST = 'Acquisition host';

/** A path as the reference reads it on a Source host: an absolute one as is, else under the host's directory. */
export function onHost(directory: string, path: string): string {
  if (path.startsWith('/') || directory === '') return path;
  return `${directory.replace(/\/+$/, '')}/${path}`;
}

const sourceOf = (host: { hostId: string; login: string; host: string }, protocol: string) => ({
  hostId: host.hostId,
  login: host.login,
  address: host.host,
  protocol,
});

/** An error while the bytes flow says no more of the credentials than one at the open. */
async function* scrubbed(stream: AsyncIterable<Uint8Array>, secrets: readonly string[]) {
  try {
    yield* stream;
  } catch (error) {
    throw new Error(failureMessage(error, secrets));
  }
}
