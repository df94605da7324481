import { createHash } from 'node:crypto';
import { Socket } from 'node:net';
import ssh2, { type CipherAlgorithm, Client, type ClientChannel, type SFTPWrapper } from 'ssh2';
import { readDuration } from '../../core/dissemination/method-options.ts';
import type { HostConnection } from '../../core/dissemination/methods.ts';
import { runtimeCiphers } from '../ssh-ciphers.ts';

/**
 * One SSH connection with its SFTP channel, as the SFTP method uses it for one send at a time.
 * Errors say what failed and where; the password is handed to ssh2 for the connection only.
 */
export interface SftpSession {
  /** The pool's key: host, port, login and a hash of the credentials. */
  readonly key: string;
  readonly sftp: SFTPWrapper;
  /** `host:port`, for messages. */
  readonly where: string;
  /** Set once the connection closed or failed: the session is never used again. */
  readonly lost: () => Error | null;
  /**
   * Calls `listener` when the connection goes away, so that no request waits for an answer
   * forever; answers the unsubscribe (a session outlives many sends).
   */
  onClose(listener: (error: Error) => void): () => void;
  /**
   * Runs `send` with the connection's socket corked: ssh2 writes each packet (32 KiB of data at
   * most) on its own, and a write request's packets then leave in one system call instead.
   */
  batch(send: () => void): void;
  /**
   * Runs a command on an exec channel of the same connection and answers its exit code (-1 when
   * the server gave none, e.g. a signal ended it). Its output is read and dropped.
   */
  exec(command: string, signal: AbortSignal): Promise<number>;
  /** Ends the connection; resolves once it is closed (the server has ended the session by then). */
  end(): Promise<void>;
  /**
   * Closes the connection at once, with a reset: what the system still held to send is discarded
   * with it, so the server gets no more of the session's writes.
   */
  drop(reason: Error): void;
}

/** The `sftp.*` options the connection reads. */
export interface SftpCredentials {
  privateKey: string | null;
  passPhrase: string | null;
  fingerPrint: string | null;
}

export function credentialsOf(host: HostConnection): SftpCredentials {
  const text = (name: string) => {
    const value = host.options.raw.get(name);
    return value === undefined || value.trim() === '' ? null : value;
  };
  return { privateKey: text('privateKey'), passPhrase: text('passPhrase'), fingerPrint: text('fingerPrint') };
}

export const whereOf = (host: HostConnection) => `${host.hostname}:${host.options.port ?? 22}`;

/** Sessions are shared only between sends that would have opened the very same connection. */
export function sessionKey(host: HostConnection, credentials: SftpCredentials): string {
  const secrets = createHash('sha256')
    .update(JSON.stringify([host.password, credentials.privateKey, credentials.passPhrase, credentials.fingerPrint]))
    .digest('base64url');
  return `${host.login}@${whereOf(host)}#${secrets}`;
}

// `sftp.serverAliveInterval` (milliseconds, as the reference reads it), and the unanswered ones after
// which ssh2 ends the session.
const KEEPALIVE_MS = 60_000;
const KEEPALIVE_COUNT_MAX = 3;

/**
 * AES-GCM first: Node's OpenSSL runs it with AES-NI whether or not ssh2's native binding was
 * built, while chacha20-poly1305 falls back to a slow JavaScript Poly1305 without it. Those this
 * runtime cannot run are left out, when the first session opens: a runtime that can run none fails
 * its SFTP sends, with why, and nothing else.
 */
const PREFERRED_CIPHERS: CipherAlgorithm[] = [
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
  'aes128-ctr',
  'aes192-ctr',
  'aes256-ctr',
  'chacha20-poly1305@openssh.com',
];
let ciphers: CipherAlgorithm[] | null = null;

/** The host key's fingerprints in the forms operators copy: `SHA256:` base64, and hex MD5. */
export function fingerprintsOf(key: Buffer): { sha256: string; md5: string } {
  return {
    sha256: createHash('sha256').update(key).digest('base64').replace(/=+$/, ''),
    md5: createHash('md5').update(key).digest('hex'),
  };
}

/** Leniently: with or without the `SHA256:`/`MD5:` label, base64 padding, colons or case in hex. */
export function fingerprintMatches(expected: string, key: Buffer): boolean {
  const { sha256, md5 } = fingerprintsOf(key);
  const text = expected.trim().replace(/^(SHA256|MD5):/i, '');
  const hex = text.replace(/:/g, '').toLowerCase();
  return text.replace(/=+$/, '') === sha256 || hex === md5;
}

export function connect(host: HostConnection, credentials: SftpCredentials, signal: AbortSignal): Promise<SftpSession> {
  const where = whereOf(host);
  // Before any connection is opened: a key that cannot be used fails the attempt with that reason.
  const keyProblem = privateKeyProblem(credentials);
  if (keyProblem !== null) {
    return Promise.reject(new Error(`Cannot use sftp.privateKey for ${host.login}@${where}: ${keyProblem}`));
  }
  let cipher: CipherAlgorithm[];
  try {
    cipher = ciphers ??= runtimeCiphers(PREFERRED_CIPHERS);
  } catch (error) {
    return Promise.reject(error);
  }
  const client = new Client();
  // Ours rather than ssh2's, so that `batch` can cork it. Its errors reach ssh2 once `client.connect`
  // has taken it; this listener is there before it can emit at all, so that a failure before then (or
  // one ssh2 no longer listens for) ends the attempt, never the process.
  const socket = new Socket();
  socket.on('error', (error) => {
    lost ??= new Error(`Connection to ${where} lost: ${error.message}`);
  });
  let offeredKey: Buffer | null = null;
  let lost: Error | null = null;
  let closed = false;
  const closeListeners = new Set<(error: Error) => void>();

  return new Promise<SftpSession>((resolve, reject) => {
    let ready = false;
    const fail = (error: Error) => {
      if (!ready) {
        ready = true;
        signal.removeEventListener('abort', onAbort);
        client.end();
        socket.destroy();
        reject(error);
      }
    };
    const onAbort = () => {
      fail(signal.reason instanceof Error ? signal.reason : new Error(`Connection to ${where} aborted`));
      client.destroy();
    };
    signal.addEventListener('abort', onAbort, { once: true });

    client.on('error', (error: Error & { level?: string }) => {
      if (!ready) fail(connectError(error, host, where, credentials, offeredKey));
      else lost ??= new Error(`Connection to ${where} lost: ${error.message}`);
    });
    client.on('close', () => {
      closed = true;
      lost ??= new Error(`Connection to ${where} closed by the server`);
      for (const listener of [...closeListeners]) listener(lost);
      closeListeners.clear();
      fail(lost);
    });
    client.on('keyboard-interactive', (_name, _instructions, _lang, prompts, finish) => {
      finish(prompts.map(() => host.password ?? ''));
    });
    client.on('ready', () => {
      client.sftp((error, sftp) => {
        if (error) return fail(new Error(`SFTP subsystem refused by ${where}: ${error.message}`));
        // A packet the server got wrong: the connection is closed, which fails every request still
        // waiting for an answer (as the close of a lost connection does); it is never used again.
        sftp.on('error', (sftpError: Error) => {
          lost ??= new Error(`Connection to ${where} lost: ${sftpError.message}`);
          client.destroy();
          socket.destroy();
        });
        if (ready) return sftp.end();
        ready = true;
        signal.removeEventListener('abort', onAbort);
        resolve({
          key: sessionKey(host, credentials),
          sftp,
          where,
          lost: () => lost,
          onClose: (listener) => {
            closeListeners.add(listener);
            return () => closeListeners.delete(listener);
          },
          batch: (send) => {
            socket.cork();
            try {
              send();
            } finally {
              socket.uncork();
            }
          },
          exec: (command, execSignal) => runCommand(client, command, execSignal, () => lost),
          end: () => {
            lost ??= new Error(`Connection to ${where} closed`);
            // Our socket's close, which follows the server's end of the session, or its destruction.
            const ended = new Promise<void>((resolve) => {
              if (closed || socket.destroyed) return resolve();
              socket.once('close', () => resolve());
            });
            client.end();
            // A stalled server may never answer the disconnect.
            setTimeout(() => reset(socket, client), 2_000).unref();
            return ended;
          },
          drop: (reason) => {
            lost ??= reason;
            reset(socket, client);
          },
        });
      });
    });

    const methods: Array<'publickey' | 'password' | 'keyboard-interactive'> = [];
    if (credentials.privateKey !== null) methods.push('publickey');
    if (host.password !== null) methods.push('password', 'keyboard-interactive');
    const expected = credentials.fingerPrint;
    socket.once('error', (error) => fail(connectError(error, host, where, credentials, offeredKey)));
    try {
      // Connecting before ssh2 has it: given a socket that is not connecting, ssh2 takes it as connected.
      socket.connect({ host: host.hostname, port: host.options.port ?? 22 });
      client.connect({
        sock: socket,
        username: host.login,
        password: host.password ?? undefined,
        privateKey: credentials.privateKey ?? undefined,
        passphrase: credentials.passPhrase ?? undefined,
        tryKeyboard: host.password !== null,
        authHandler: methods,
        readyTimeout: host.options.connectTimeoutMs,
        // A session whose server stops answering is found out even while idle or waiting on a write.
        keepaliveInterval: readDuration(host.options.raw.get('serverAliveInterval'), KEEPALIVE_MS) ?? KEEPALIVE_MS,
        keepaliveCountMax: KEEPALIVE_COUNT_MAX,
        algorithms: { cipher },
        hostVerifier:
          expected === null
            ? undefined
            : (key: Buffer) => {
                offeredKey = key;
                return fingerprintMatches(expected, key);
              },
      });
      // Each step (handshake, login, every SFTP request) waits for the answer to a small message:
      // Nagle's algorithm against the server's delayed ACK would hold each one up to 40 ms.
      socket.setNoDelay(true);
    } catch (error) {
      fail(new Error(`Connection to ${where} failed: ${(error as Error).message}`));
    }
  });
}

/** Why ssh2 would refuse `sftp.privateKey` (and `sftp.passPhrase`), as its connect checks it; null if usable. */
function privateKeyProblem(credentials: SftpCredentials): string | null {
  if (credentials.privateKey === null) return null;
  let parsed: ReturnType<typeof ssh2.utils.parseKey>;
  try {
    parsed = ssh2.utils.parseKey(credentials.privateKey, credentials.passPhrase ?? undefined);
  } catch (error) {
    return (error as Error).message;
  }
  if (parsed instanceof Error) return parsed.message;
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key.getPrivatePEM() === null) return 'it does not contain a (valid) private key';
  return null;
}

function connectError(
  error: Error & { level?: string },
  host: HostConnection,
  where: string,
  credentials: SftpCredentials,
  offeredKey: Buffer | null,
): Error {
  if (
    offeredKey !== null &&
    credentials.fingerPrint !== null &&
    !fingerprintMatches(credentials.fingerPrint, offeredKey)
  ) {
    const { sha256, md5 } = fingerprintsOf(offeredKey);
    return new Error(
      `Host key of ${where} does not match sftp.fingerPrint: the server offers SHA256:${sha256} (MD5 ${md5})`,
    );
  }
  if (error.level === 'client-authentication') return new Error(`Authentication failed for ${host.login}@${where}`);
  if (error.level === 'client-timeout') {
    return new Error(`Connection to ${where} timed out after ${host.options.connectTimeoutMs} ms`);
  }
  return new Error(`Connection to ${where} failed: ${error.message}`);
}

function runCommand(client: Client, command: string, signal: AbortSignal, lost: () => Error | null): Promise<number> {
  const gone = lost();
  if (gone) return Promise.reject(gone);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<number>((resolve, reject) => {
    let channel: ClientChannel | null = null;
    const onAbort = () => {
      channel?.close();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const done = () => signal.removeEventListener('abort', onAbort);
    client.exec(command, (error, stream) => {
      if (error) {
        done();
        return reject(new Error(`Cannot start the command: ${error.message}`));
      }
      channel = stream;
      // The channel's close follows, and answers.
      stream.on('error', () => undefined);
      stream.stderr.on('error', () => undefined);
      let code = -1;
      stream.on('exit', (exitCode: number | null) => {
        if (typeof exitCode === 'number') code = exitCode;
      });
      stream.on('close', () => {
        done();
        resolve(code);
      });
      stream.resume();
      stream.stderr.resume();
    });
  });
}

/**
 * Ends a connection with a TCP reset rather than a close: a plain close leaves what the system
 * buffered still going out (megabytes on a slow link), so the server would go on writing the
 * file while the next attempt, on another connection, writes it too.
 */
function reset(socket: Socket, client: Client) {
  if (!socket.destroyed && !socket.connecting) socket.resetAndDestroy();
  client.destroy();
  socket.destroy();
}
