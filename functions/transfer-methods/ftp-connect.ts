import type { ConnectionOptions } from 'node:tls';
import { Client } from 'basic-ftp';
import { readFlag } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';

export type FtpKind = 'ftp' | 'ftps';

/** Where and how to open a session; equal targets may share idle sessions. */
export interface FtpTarget {
  hostname: string;
  port: number;
  login: string;
  password: string;
  security: 'plain' | 'explicit' | 'implicit';
  /** Verify the server's certificate (`ftps.strict`). */
  strict: boolean;
  /** basic-ftp's one timeout: connecting, waiting for each reply, and a data connection that stalls. */
  timeoutMs: number;
}

/**
 * The host's connection settings. basic-ftp only does passive mode (EPSV, then PASV), so every
 * host is reached in passive mode whatever `ftp.passive` says: the reference's default, active
 * mode, needs the server to connect back to the mover, which a mover behind NAT or in a
 * container cannot accept anyway. `ftp.extended` is moot for the same reason.
 */
export function ftpTarget(kind: FtpKind, host: HostConnection): FtpTarget {
  const raw = host.options.raw;
  const type = raw.get('connectionType')?.trim().toUpperCase();
  // The reference defaults ftps.connectionType to FTP (plain): a method named ftps that sends
  // passwords in clear is a trap, so an unset type means explicit TLS (FTPES) here.
  const security = kind === 'ftp' || type === 'FTP' ? 'plain' : type === 'FTPS' ? 'implicit' : 'explicit';
  return {
    hostname: host.hostname,
    port: host.options.port ?? (security === 'implicit' ? 990 : 21),
    // The reference lets ftps.login / ftps.password override the host's credentials.
    login: raw.get('login') ?? host.login,
    password: raw.get('password') ?? host.password ?? '',
    security,
    // The reference trusts any certificate unless ftps.strict is set.
    strict: kind === 'ftps' && readFlag(raw.get('strict'), false),
    timeoutMs: host.options.connectTimeoutMs,
  };
}

const CERTIFICATE_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME/;

/** An error's message for an operator: no password, and a hint when the certificate was refused. */
export function reason(error: unknown, password: string): string {
  let text = error instanceof Error ? error.message : String(error);
  if (password.length >= 3) text = text.split(password).join('***');
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && CERTIFICATE_ERROR.test(code))
    text += ' (ftps.strict is set: the certificate is verified)';
  return text;
}

/**
 * Connects, secures and logs in, each step failing with what failed. `signal` ends the attempt
 * at once: the socket is closed and the signal's reason thrown.
 */
export async function openClient(target: FtpTarget, signal: AbortSignal): Promise<Client> {
  signal.throwIfAborted();
  const client = new Client(target.timeoutMs);
  const where = `${target.hostname}:${target.port}`;
  // `host` also serves the data connections, which must present the same certificate.
  const tls: ConnectionOptions = {
    host: target.hostname,
    rejectUnauthorized: target.strict,
  };
  const step = async <T>(failure: string, run: () => Promise<T>) => {
    try {
      return await run();
    } catch (error) {
      throw new Error(`${failure}: ${reason(error, target.password)}`);
    }
  };
  const abort = () => client.close();
  signal.addEventListener('abort', abort, { once: true });
  try {
    await step(`Connection to ${where} failed`, () =>
      target.security === 'implicit'
        ? client.connectImplicitTLS(target.hostname, target.port, tls)
        : client.connect(target.hostname, target.port),
    );
    if (target.security === 'explicit') await step(`TLS negotiation with ${where} failed`, () => client.useTLS(tls));
    // Non-ASCII names and passwords need UTF-8; servers that do not know the command say so.
    await client.sendIgnoringError('OPTS UTF8 ON');
    await step(`Login failed for ${target.login}`, () => client.login(target.login, target.password));
    // Binary mode (so SIZE answers bytes), and PBSZ/PROT P under TLS.
    await step(`Session setup with ${where} failed`, () => client.useDefaultSettings());
    return client;
  } catch (error) {
    client.close();
    throw signal.aborted ? signal.reason : error;
  } finally {
    signal.removeEventListener('abort', abort);
  }
}

/** How long a server has to end a session once asked to (QUIT) before its connection is cut. */
const END_GRACE_MS = 2_000;

/**
 * Ends a session and resolves once its connection has closed: the data connection, if one is
 * open, is ended (the server closes the file it was writing), the server is asked to QUIT and
 * closes the control connection once it has ended the session; one that does not within
 * `graceMs` is cut off. A session basic-ftp already closed resolves at once.
 */
export function endClient(client: Client, graceMs = END_GRACE_MS): Promise<void> {
  if (client.closed) {
    client.close();
    return Promise.resolve();
  }
  const ftp = client.ftp;
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => client.close(), graceMs);
    // Every way the connection ends goes through here: the server's FIN after its 221, an error, the grace.
    const close = ftp.closeWithError;
    ftp.closeWithError = (error: Error) => {
      clearTimeout(timer);
      close.call(ftp, error);
      resolve();
    };
    ftp.dataSocket?.end();
    ftp.send('QUIT');
  });
}
