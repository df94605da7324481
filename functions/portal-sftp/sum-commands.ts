import { createHash } from 'node:crypto';
import type { ServerChannel } from 'ssh2';
import { type PortalIdentity, PortalLoginRefused } from '../../core/portal/access.ts';
import { parseSumCommand, type SumCommand, sumLine } from '../../core/portal/sum-commands.ts';
import type { Ports } from '../../core/ports.ts';
import { sumsAt } from './sums-at.ts';

export interface SumCommandDeps {
  ports: Ports;
  /** The session's user as it is now (server.ts): the same login check as each SFTP request. */
  identity(): Promise<PortalIdentity>;
  touch(): void;
}

/** What md5sum says of a path it cannot sum, as GNU coreutils words it. */
const REASONS = { missing: 'No such file or directory', denied: 'Permission denied', directory: 'Is a directory' };

/**
 * An `exec` request of a logged-in session: `md5sum` or `sha512sum` (core/portal/sum-commands.ts)
 * answered as the program would, from the files' known sums; any other command is refused, as an
 * SSH server refuses a command it won't run (no channel). A file without a known sum gets no line
 * and a word on stderr, and does not fail the command: rclone reads an empty answer as "no hash"
 * and goes on by size, where a failure would count every such file as corrupted after its download.
 */
export function serveSumCommand(
  command: string,
  accept: () => ServerChannel,
  reject: () => void,
  deps: SumCommandDeps,
) {
  const parsed = parseSumCommand(command);
  if (parsed === null) {
    reject();
    return;
  }
  const channel = accept();
  // Read from the start, as the client may send its input (and its end) at once.
  const input = parsed.files.length === 0 ? digestOfInput(channel, parsed) : null;
  // A channel closed while the user is checked ends its input unanswered; the command is then refused below.
  input?.catch(() => undefined);
  run(parsed, input, deps).then(
    (done) => finish(channel, done),
    (e: unknown) => {
      const refused = e instanceof PortalLoginRefused;
      if (!refused) deps.ports.logger.warn('portal sftp command failed', { command, reason: String(e) });
      const err = `${parsed.program}: ${refused ? 'Permission denied' : 'the sums cannot be read now'}\n`;
      finish(channel, { out: '', err, code: 1 });
    },
  );
}

interface Done {
  out: string;
  err: string;
  code: number;
}

async function run(command: SumCommand, input: Promise<string> | null, deps: SumCommandDeps): Promise<Done> {
  const who = await deps.identity();
  deps.touch();
  if (input !== null) return { out: sumLine(await input, '-'), err: '', code: 0 };
  let out = '';
  let err = '';
  let code = 0;
  for (const name of command.files) {
    const at = await sumsAt(deps.ports, who, name);
    if (at.kind !== 'file') {
      err += `${command.program}: ${name}: ${REASONS[at.kind]}\n`;
      code = 1;
      continue;
    }
    const hex = at.sums[command.algorithm];
    if (hex === undefined) err += `${command.program}: ${name}: no checksum is known for this file yet\n`;
    else out += sumLine(hex, name);
  }
  return { out, err, code };
}

/** The sum of what the client sends until its end of input. */
function digestOfInput(channel: ServerChannel, command: SumCommand) {
  const hash = createHash(command.algorithm);
  return new Promise<string>((resolve, reject) => {
    channel.on('data', (chunk: Buffer) => hash.update(chunk));
    channel.on('end', () => resolve(hash.digest('hex')));
    channel.on('close', () => reject(new Error('the channel closed before the end of its input')));
  });
}

/** The output, then the exit status before the channel's end, as OpenSSH's server sends them. */
function finish(channel: ServerChannel, done: Done) {
  if (channel.destroyed) return;
  if (done.out !== '') channel.write(done.out);
  if (done.err !== '') channel.stderr.write(done.err);
  channel.exit(done.code);
  channel.end();
}
