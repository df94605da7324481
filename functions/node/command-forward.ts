import fs from 'node:fs';
import net from 'node:net';
import { VERSION } from '../../core/system/version.ts';
import type { CommandContext } from './cli-io.ts';
import { type CommandAnswer, type CommandRequest, readLines, socketPath, tokenPath } from './command-channel.ts';
import { ConfigError, parseConfig } from './config.ts';
import { holder } from './lock.ts';

/**
 * The command line's end of the command channel (command-channel.ts): a command that finds the
 * embedded database held by a running server hands its command line to that server, which runs
 * it, and prints what the server's run writes, with its exit code.
 */

/** Answers are what commands print: no line limit worth keeping, only one against a runaway. */
const MAX_ANSWER_LINE = 256 * 1024 * 1024;

const code = (e: unknown) => (e as NodeJS.ErrnoException | null)?.code;

const inUse = (dataDir: string, pid: number, reason: string) =>
  new ConfigError(
    `the embedded database in ${dataDir} is in use by a running server (pid ${pid}), which takes no command ` +
      `now (${reason}); stop it first, or point both at Postgres with DATABASE_URL`,
  );

/**
 * Whether the command was handed to the server holding the embedded database (and its output
 * printed, its exit code set); false when it is to run here: on Postgres, with no server holding
 * the data dir, or in that server itself.
 */
export async function handedToServer(ctx: CommandContext): Promise<boolean> {
  if (ctx.attached) return false;
  const { databaseUrl, dataDir } = parseConfig(ctx.io.env);
  if (databaseUrl) return false;
  const pid = holder(dataDir);
  if (pid === null) return false;
  let token: string;
  try {
    token = fs.readFileSync(tokenPath(dataDir), 'utf8').trim();
  } catch (e) {
    if (code(e) === 'EACCES') {
      throw inUse(dataDir, pid, `only the user it runs as may hand it commands: ${tokenPath(dataDir)} is not readable`);
    }
    // Stopped meanwhile: the command runs here. Else starting, or a version without the channel.
    if (holder(dataDir) === null) return false;
    throw inUse(dataDir, pid, `${tokenPath(dataDir)} is missing: it is starting, or its log says why`);
  }
  const request: CommandRequest = { version: VERSION, token, argv: [...ctx.argv] };
  const exit = await ask(socketPath(dataDir), request, ctx).catch((e: unknown) => {
    if (e instanceof ConfigError) throw e;
    // Not connected, so nothing was done; a server that stopped meanwhile leaves the command to run here.
    if (holder(dataDir) === null) return null;
    throw inUse(dataDir, pid, `its command socket: ${code(e) ?? String(e)}`);
  });
  if (exit === null) return false;
  ctx.exitCode = exit;
  return true;
}

const unknownOutcome = () =>
  new ConfigError(
    'the running server closed the connection before the command ended: it may or may not have been done',
  );

/**
 * Sends the request and prints the answers; resolves with the exit code. Rejects with a ConfigError
 * once the request was sent (the server may have run it); with the connection's error before.
 */
function ask(file: string, request: CommandRequest, ctx: CommandContext) {
  return new Promise<number>((resolve, reject) => {
    let sent = false;
    let exit: number | null = null;
    const socket = net.connect(file, () => {
      sent = true;
      socket.write(`${JSON.stringify(request)}\n`);
    });
    socket.on('error', (e) => {
      if (exit === null) reject(sent ? unknownOutcome() : e);
    });
    socket.on('close', () => (exit === null ? reject(unknownOutcome()) : resolve(exit)));
    readLines(
      socket,
      MAX_ANSWER_LINE,
      (line) => {
        let message: CommandAnswer;
        try {
          message = JSON.parse(line) as CommandAnswer;
        } catch {
          socket.destroy();
          return false;
        }
        if ('stdout' in message) ctx.io.stdout.write(message.stdout);
        else if ('stderr' in message) ctx.io.stderr.write(message.stderr);
        else {
          exit = message.exit;
          socket.end();
        }
        return exit === null;
      },
      () => socket.destroy(),
    );
  });
}
