import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { Writable } from 'node:stream';
import type { Logger } from '../../core/ports.ts';
import { VERSION } from '../../core/system/version.ts';
import { addIncomingCommands } from './cli-incoming.ts';
import { CommandContext } from './cli-io.ts';
import { addServedAdminCommands } from './cli-operations.ts';
import { rootCommand, runProgram } from './cli-program.ts';
import { isServed, SERVED_GROUPS } from './cli-served.ts';
import {
  type CommandAnswer,
  type CommandRequest,
  channelDir,
  MAX_REQUEST_BYTES,
  MAX_SOCKET_PATH,
  readLines,
  socketPath,
  tokenPath,
} from './command-channel.ts';
import type { Runtime } from './runtime.ts';

/**
 * The server's end of the command channel (command-channel.ts): with the embedded database, it runs
 * the commands of cli-served.ts handed to it on its own database and ports, as the command
 * line would have run them, so their changes are its own (its sessions see them at their next
 * request) and their output and exit code are those of a direct run.
 */

export interface CommandServer {
  path: string;
  /** Refuses new commands, waits for those under way, and removes the socket and the token. */
  close(): Promise<void>;
}

/** A connection has this long to ask; a command it asked for runs to its end. */
const REQUEST_TIMEOUT_MS = 10_000;

const digest = (text: string) => crypto.createHash('sha256').update(text).digest();
const sameToken = (given: string, token: string) => crypto.timingSafeEqual(digest(given), digest(token));

/** `<data dir>/cli`, this user's only: created so, or made so when it is ours already. */
function privateDir(dir: string) {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.lstatSync(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (process.getuid && stat.uid !== process.getuid()) throw new Error(`${dir} belongs to another user`);
  fs.chmodSync(dir, 0o700);
}

function isRequest(value: unknown): value is CommandRequest {
  const r = value as Partial<CommandRequest> | null;
  return (
    typeof r === 'object' &&
    r !== null &&
    typeof r.version === 'string' &&
    typeof r.token === 'string' &&
    Array.isArray(r.argv) &&
    r.argv.every((a) => typeof a === 'string')
  );
}

/** Starts the channel; null (with a warning) where it cannot be, and commands then need the server stopped. */
export async function startCommandServer(runtime: Runtime, logger: Logger): Promise<CommandServer | null> {
  const { dataDir } = runtime.config;
  const file = socketPath(dataDir);
  const unavailable = (reason: string) => {
    logger.warn('no command socket: every command on the database needs the server stopped', { reason });
    return null;
  };
  // Windows' named pipes have no file mode to keep other users out.
  if (process.platform === 'win32') return unavailable('not on Windows');
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    return unavailable(`${file} is longer than a socket path may be (${MAX_SOCKET_PATH} bytes)`);
  }
  const token = crypto.randomBytes(32).toString('base64url');
  try {
    privateDir(channelDir(dataDir));
    // Left by a server that did not stop cleanly; this one holds the data dir now.
    fs.rmSync(file, { force: true });
    fs.rmSync(tokenPath(dataDir), { force: true });
    fs.writeFileSync(tokenPath(dataDir), `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    return unavailable(e instanceof Error ? e.message : String(e));
  }

  const running = new Set<Promise<void>>();
  const waiting = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    waiting.add(socket);
    // A client gone before its answer: the command still ends, unheard.
    socket.on('error', () => {});
    socket.on('close', () => waiting.delete(socket));
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy());
    readLines(
      socket,
      MAX_REQUEST_BYTES,
      (line) => {
        waiting.delete(socket);
        socket.setTimeout(0);
        const work = answer(socket, line, token, runtime, logger).catch((e: unknown) => {
          logger.error('command from the command line failed', { reason: String(e) });
          socket.destroy();
        });
        running.add(work);
        void work.finally(() => running.delete(work));
        return false;
      },
      () => socket.destroy(),
    );
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(file, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The directory already keeps others out; the socket's own mode too, where the system reads it.
    fs.chmodSync(file, 0o600);
  } catch (e) {
    server.close();
    return unavailable(e instanceof Error ? e.message : String(e));
  }
  return {
    path: file,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of waiting) socket.destroy();
      await Promise.all(running);
      await closed;
      fs.rmSync(file, { force: true });
      fs.rmSync(tokenPath(dataDir), { force: true });
    },
  };
}

/** Checks the request, runs its command, and sends what it writes, then its exit code. */
async function answer(socket: net.Socket, line: string, token: string, runtime: Runtime, logger: Logger) {
  const send = (message: CommandAnswer) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(message)}\n`);
  };
  const refuse = (reason: string, message: string) => {
    logger.warn('command from the command line refused', { reason });
    send({ stderr: `ecpds-edge: ${message}\n` });
    send({ exit: 1 });
    socket.end();
  };
  let request: unknown;
  try {
    request = JSON.parse(line);
  } catch {
    request = null;
  }
  if (!isRequest(request)) return refuse('malformed request', 'the running server did not understand the request');
  // Not a word of what was given: a wrong token is a secret of someone's, perhaps a near miss.
  if (!sameToken(request.token, token)) return refuse('wrong token', 'the running server refused the command');
  if (request.version !== VERSION) {
    return refuse(
      'another version',
      `the running server is version ${VERSION}, this command line ${request.version}: ` +
        "run the server's own ecpds-edge, or stop the server first",
    );
  }
  const { argv } = request;
  if (!isServed(argv)) {
    return refuse(
      'not a command it takes',
      `the running server takes only \`ecpds-edge ${SERVED_GROUPS.join('|')}\` commands`,
    );
  }
  const stream = (kind: 'stdout' | 'stderr') =>
    new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        send(kind === 'stdout' ? { stdout: String(chunk) } : { stderr: String(chunk) });
        done();
      },
    });
  const io = { stdout: stream('stdout'), stderr: stream('stderr'), env: process.env };
  const ctx = new CommandContext(io, argv, runtime);
  const exit = await runProgram(ctx, argv, () => {
    const root = rootCommand(io);
    addIncomingCommands(root, ctx);
    addServedAdminCommands(root, ctx);
    return root;
  });
  // Each write is sent as it is made; ending the streams waits for any one still queued.
  await Promise.all([io.stdout, io.stderr].map((s) => new Promise((resolve) => s.end(resolve))));
  // The command's name, not its arguments: those are the audit trail's to record.
  logger.info('command from the command line', { command: argv.slice(0, 2).join(' '), exitCode: exit });
  send({ exit });
  socket.end();
}
