import net, { type AddressInfo, type Socket } from 'node:net';
import type { AuthContext, CipherAlgorithm, Connection } from 'ssh2';
import ssh2 from 'ssh2';
import { isServiceError } from '../../core/common/errors.ts';
import { deaEvent } from '../../core/common/events.ts';
import { StartupLimits } from '../../core/common/startup-limits.ts';
import type { SourceReader } from '../../core/dissemination/send.ts';
import { type PortalIdentity, PortalLoginRefused, portalLogin } from '../../core/portal/access.ts';
import { portalMode } from '../../core/portal/login.ts';
import { DEFAULT_PORTAL_RECHECK_MS } from '../../core/portal/revocation.ts';
import { CREDENTIALS_CHANGED, stillAdmitted } from '../../core/portal/still-admitted.ts';
import type { Ports } from '../../core/ports.ts';
import { logServerErrors } from '../node/server-errors.ts';
import type { UploadMover, UploadStore } from '../portal/upload.ts';
import { runtimeCiphers } from '../ssh-ciphers.ts';
import { type HostKey, sshFingerprint } from './host-key.ts';
import { madeDirectoriesByUser } from './made-directories.ts';
import { SFTP, serveSubsystem } from './subsystem.ts';
import { serveSumCommand } from './sum-commands.ts';

export interface PortalSftpOptions {
  ports: Ports;
  host: string;
  /** 0: any free port (tests). */
  port: number;
  hostKey: HostKey;
  sources: SourceReader;
  uploads: (UploadStore & UploadMover) | null;
  serverName: string;
  /** A connection not logged in by then, from its first byte, is closed (default 30 s; OpenSSH's LoginGraceTime). */
  loginTimeoutMs?: number;
  /**
   * Connections not logged in yet, at most, in all and from one address (default 100 and 10): one
   * more is closed at once (OpenSSH's MaxStartups, PerSourceMaxStartups).
   */
  maxStartups?: { total: number; perAddress: number };
  /** A session with no request for this long is closed (default 10 minutes). */
  idleTimeoutMs?: number;
  /**
   * How long a session goes on the user of its last check before reading it again (default
   * DEFAULT_PORTAL_RECHECK_MS): a change made by another server is seen within it; one made in this
   * process at the next request.
   */
  recheckMs?: number;
}

export interface PortalSftpServer {
  port: number;
  fingerprint: string;
  /** Stops accepting connections and ends those open (their downloads accounted). */
  close(): Promise<void>;
}

const LOGIN_TIMEOUT_MS = 30_000;
const MAX_STARTUPS = { total: 100, perAddress: 10 };
const IDLE_TIMEOUT_MS = 10 * 60_000;

/**
 * AES-GCM first, as the SFTP method's client: Node's OpenSSL runs it with AES-NI; chacha20 next
 * (ssh2's binding), then CTR with an HMAC for older clients. Those this runtime cannot run are left out.
 */
const CIPHERS: CipherAlgorithm[] = [
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
  'chacha20-poly1305@openssh.com',
  'aes128-ctr',
  'aes192-ctr',
  'aes256-ctr',
];

/**
 * The data portal over SFTP (and `scp`, which speaks SFTP by default): ssh2's server on its own
 * port, with the portal's login check for passwords and the user's own keys, and nothing but the
 * `sftp` subsystem once logged in, and the sums of its files (md5sum, sha512sum): no shell, no other
 * command, no forwarding.
 */
export async function startPortalSftp(options: PortalSftpOptions): Promise<PortalSftpServer> {
  const { ports } = options;
  const loginTimeoutMs = options.loginTimeoutMs ?? LOGIN_TIMEOUT_MS;
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  const recheckMs = options.recheckMs ?? DEFAULT_PORTAL_RECHECK_MS;
  const open = new Set<Connection>();
  /** Every socket gets `loginTimeoutMs` to log in, from its first byte: ssh2 tells of a connection only after the handshake. */
  const loginTimers = new Map<Socket, NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  const startups = new StartupLimits(options.maxStartups ?? MAX_STARTUPS);
  /** The sockets counted by `startups` until they log in or close, with their address. */
  const starting = new Map<Socket, string>();
  const started = (socket: Socket) => {
    const address = starting.get(socket);
    if (address === undefined) return;
    starting.delete(socket);
    startups.release(address);
  };

  const algorithms = { cipher: runtimeCiphers(CIPHERS) };
  const madeDirectories = madeDirectoriesByUser();
  const server = new ssh2.Server(
    { hostKeys: [options.hostKey.privateKey], algorithms, ident: 'ecpds-edge' },
    (client, info) => {
      open.add(client);
      // Each answer goes out at once: with Nagle's algorithm, a small answer waits for the ACK of the
      // one before, which the client delays (40 ms a file when many small ones are fetched). What is
      // written in one turn of the event loop leaves together instead (see `coalesceWrites`).
      const socket = socketOf(client);
      if (socket) {
        socket.setNoDelay(true);
        coalesceWrites(socket);
      }
      const address = info.ip;
      let who: LoggedIn | null = null;
      /** Set once the session may do nothing more: its credentials changed, or its user was refused. */
      let ended = false;
      let checking: Promise<PortalIdentity> | null = null;
      const closers: Array<() => Promise<void>> = [];
      let lastActivity = Date.now();
      const idleTimer = setInterval(
        () => {
          if (Date.now() - lastActivity >= idleTimeoutMs) hangUp(client);
        },
        Math.min(30_000, Math.max(50, idleTimeoutMs / 4)),
      );
      client.on('close', () => {
        open.delete(client);
        clearInterval(idleTimer);
        for (const close of closers) void close();
      });
      client.on('error', (e: Error) =>
        ports.logger.info('portal sftp connection error', { address, reason: e.message }),
      );

      client.on('authentication', (ctx) => {
        // Taken before the check: a change of the user while it runs is seen at the next request.
        const mark = ports.portalLogins.mark();
        authenticate(ctx, address)
          .then((login) => {
            if (login === null) return;
            who = { ...login, checkedAt: Date.now(), mark };
            ctx.accept();
          })
          .catch((e: unknown) => {
            // A refusal was written to its DEA line; anything else is a fault of this side.
            if (!isServiceError(e)) {
              ports.logger.warn('portal sftp login could not be checked', { address, reason: String(e) });
            }
            ctx.reject(['publickey', 'password']);
          });
      });
      client.on('ready', () => {
        if (socket) {
          clearTimeout(loginTimers.get(socket));
          started(socket);
        }
        lastActivity = Date.now();
      });

      /**
       * The session's user as it is now: the login check again every `recheckMs`, as the HTTPS portal
       * does per request, and at once after a change of the user made in this process. A session whose
       * credentials changed (see stillOpened), or whose user is refused for good, ends: the refusal is
       * answered, then the connection closed, discarding the uploads it left open.
       */
      const identity = async () => {
        if (who === null || ended) throw new PortalLoginRefused(false);
        const userId = who.identity.userId;
        if (Date.now() - who.checkedAt < recheckMs && !ports.portalLogins.changedSince(userId, who.mark)) {
          return who.identity;
        }
        // Requests arriving together (a client keeps many reads in flight) share one check.
        checking ??= (async (session: LoggedIn) => {
          const mark = ports.portalLogins.mark();
          try {
            const checked = await recheck(session, address);
            if (!ended) who = { ...session, identity: checked, checkedAt: Date.now(), mark };
            return checked;
          } catch (e) {
            if (e instanceof PortalLoginRefused && !e.overLimit) {
              ended = true;
              // After the refusal's answer, which goes out in this turn of the event loop.
              setImmediate(() => hangUp(client));
            }
            throw e;
          } finally {
            checking = null;
          }
        })(who);
        const checked = await checking;
        if (ended) throw new PortalLoginRefused(false);
        return checked;
      };

      client.on('session', (accept) => {
        const session = accept();
        session.on('sftp', (acceptSftp) => {
          const sftp = acceptSftp();
          // Logged in before any channel opens.
          const directories = madeDirectories.open((who as LoggedIn).identity.userId);
          const closeAll = serveSubsystem(sftp, {
            ports,
            sources: options.sources,
            uploads: options.uploads,
            serverName: options.serverName,
            address,
            identity,
            madeDirectories: directories.made,
            touch: () => {
              lastActivity = Date.now();
            },
          });
          closers.push(closeAll);
          sftp.on('close', () => {
            directories.release();
            void closeAll();
          });
          // The client's end of the channel (its EOF) ends ours, with the exit status 0 sshd sends
          // for a subsystem that ended well: OpenSSH's sftp waits for the close, and scp exits 1
          // without the status. ssh2's SFTP channel has no public call for it.
          sftp.on('end', () => {
            const channel = sftp as unknown as SftpChannelInternals;
            if (channel.outgoing?.state === 'open') channel._protocol?.exitStatus(channel.outgoing.id, 0);
            sftp.end();
          });
        });
        // The only commands are the sums rclone asks for (md5sum, sha512sum: sum-commands.ts); any other
        // command (legacy `scp -O`) is refused. Nothing else runs here: no shell, no terminal, no agent.
        session.on('exec', (accept, reject, info) =>
          serveSumCommand(info.command, accept, reject, {
            ports,
            identity,
            touch: () => {
              lastActivity = Date.now();
            },
          }),
        );
        for (const refused of ['pty', 'shell', 'x11', 'auth-agent', 'env', 'subsystem', 'signal']) {
          session.on(refused, (_accept: unknown, reject?: () => void) => reject?.());
        }
      });
      client.on('tcpip', (_accept, reject) => reject());
      client.on('openssh.streamlocal', (_accept: unknown, reject: () => void) => reject());
      client.on('request', (_accept, reject) => reject?.());
    },
  );

  /**
   * The session's user read again: refused when what opened the session no longer would (its
   * credentials changed, its key removed), else the rest of the login check as it is now.
   */
  async function recheck(session: LoggedIn, address: string): Promise<PortalIdentity> {
    const { userId } = session.identity;
    if (session.keyFingerprint !== null && !(await ports.repos.portal.authorizedKey(userId, session.keyFingerprint))) {
      const context = `${SFTP}:${address}`;
      ports.events.write(deaEvent({ at: ports.clock(), userId, message: CREDENTIALS_CHANGED, context }));
      throw new PortalLoginRefused(false);
    }
    return stillAdmitted(ports, session.identity, { address, protocol: SFTP });
  }

  /** The portal's login check for one authentication request; null when it is answered already. */
  async function authenticate(ctx: AuthContext, address: string): Promise<Omit<LoggedIn, 'checkedAt' | 'mark'> | null> {
    const attempt = { login: ctx.username, address, protocol: SFTP };
    const opened = (identity: PortalIdentity, keyFingerprint: string | null = null) => ({ identity, keyFingerprint });
    switch (ctx.method) {
      case 'password':
        return opened(await portalLogin(ports, { ...attempt, password: ctx.password }));
      case 'publickey': {
        const fingerprint = sshFingerprint(ctx.key.data);
        const stored = await ports.repos.portal.authorizedKey(ctx.username, fingerprint);
        // A client asks first whether a key would do: only the user's own ever does. A key that is not
        // the user's is a client trying its keys in turn, not a failed login, signed or not.
        if (ctx.signature === undefined || stored === null) {
          if (ctx.signature === undefined && stored !== null) ctx.accept();
          else ctx.reject(['publickey', 'password']);
          return null;
        }
        const verified = signatureVerifies(stored, ctx);
        const identity = await portalLogin(ports, {
          ...attempt,
          password: null,
          keyFingerprint: verified ? fingerprint : null,
        });
        return opened(identity, fingerprint);
      }
      case 'none': {
        // Open access needs no credentials; for any other user this is the client asking what it may use.
        const user = await ports.repos.incomingUsers.find(ctx.username);
        if (user === null || portalMode(user.portalService) !== 'open-access') {
          ctx.reject(['publickey', 'password']);
          return null;
        }
        return opened(await portalLogin(ports, { ...attempt, password: null }));
      }
      default:
        ctx.reject(['publickey', 'password']);
        return null;
    }
  }

  const tcp = net.createServer((socket) => {
    const address = socket.remoteAddress ?? '';
    if (!startups.admit(address)) {
      socket.destroy();
      return;
    }
    starting.set(socket, address);
    sockets.add(socket);
    loginTimers.set(
      socket,
      setTimeout(() => socket.destroy(), loginTimeoutMs),
    );
    socket.once('close', () => {
      started(socket);
      clearTimeout(loginTimers.get(socket));
      loginTimers.delete(socket);
      sockets.delete(socket);
    });
    server.injectSocket(socket);
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(options.port, options.host, () => {
      tcp.off('error', reject);
      logServerErrors(tcp, ports.logger, 'portal sftp server error');
      resolve();
    });
  });
  const port = (tcp.address() as AddressInfo).port;
  return {
    port,
    fingerprint: options.hostKey.fingerprint,
    async close() {
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      for (const client of open) hangUp(client);
      // Those still in their handshake.
      for (const socket of sockets) if (![...open].some((c) => socketOf(c) === socket)) socket.destroy();
      await closed;
    },
  };
}

/** A logged-in session: who, by what, and when its user was last checked. */
interface LoggedIn {
  identity: PortalIdentity;
  /** The key that opened the session (it ends when the key is removed); null for a password or open access. */
  keyFingerprint: string | null;
  checkedAt: number;
  /** `portalLogins.mark()` when it was checked: a change made here since is seen at once. */
  mark: number;
}

/**
 * Ends a connection: politely (ssh2's end), then its socket, which a client that never finished its
 * handshake, or does not answer, would otherwise keep open.
 */
function hangUp(client: Connection) {
  client.end();
  const socket = socketOf(client);
  setTimeout(() => socket?.destroy(), 1000).unref();
}

/** ssh2 keeps a connection's socket to itself; the server needs it for its timers and writes. */
const socketOf = (client: Connection) => (client as unknown as { _sock?: Socket })._sock;

/** What ssh2's server-side SFTP channel keeps of its channel (lib/protocol/SFTP.js). */
interface SftpChannelInternals {
  outgoing?: { id: number; state: string };
  _protocol?: { exitStatus(channel: number, status: number): void };
}

function signatureVerifies(
  stored: { algorithm: string; blob: string },
  ctx: Extract<AuthContext, { method: 'publickey' }>,
): boolean {
  const key = ssh2.utils.parseKey(`${stored.algorithm} ${stored.blob}`);
  if (key instanceof Error || ctx.blob === undefined || ctx.signature === undefined) return false;
  return key.verify(ctx.blob, ctx.signature, ctx.hashAlgo as never) === true;
}

/**
 * Holds a socket's writes until the end of the event loop's turn and hands them to the kernel in
 * one call: ssh2 writes every SSH packet on its own, two per SFTP data answer, and many at once when
 * the client's window opens.
 */
function coalesceWrites(socket: Socket) {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = ((...args: unknown[]) => {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(uncork);
    }
    return write(...args);
  }) as Socket['write'];
}
