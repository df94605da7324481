import path from 'node:path';
import type { Runtime } from './runtime.ts';

/**
 * Where a command reads and writes. The bin passes the process's own streams; tests pass
 * their own, so a command runs in the test's process and its output can be compared.
 */
export interface CliIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin?: NodeJS.ReadableStream;
  env: NodeJS.ProcessEnv;
  /** Relative file names and patterns are resolved against it (default: the process's). */
  cwd?: string;
}

/**
 * What a command body gets: the streams, and an exit code it sets instead of
 * process.exitCode, which would leak from one in-process run into the next.
 */
export class CommandContext {
  exitCode = 0;

  /**
   * `argv`: the command line as given, which a command can hand to the server holding the embedded
   * database (command-forward.ts). `attached`: in that server, its open database, which the
   * command's body then uses instead of opening one (admin-commands.ts's withRuntime).
   */
  constructor(
    readonly io: CliIo,
    readonly argv: readonly string[] = [],
    readonly attached: Runtime | null = null,
  ) {}

  /** One value on stdout: a string as it is, anything else as indented JSON. */
  out(value: unknown) {
    this.io.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
  }

  error(line: string) {
    this.io.stderr.write(`ecpds-edge: ${line}\n`);
  }

  resolve(file: string): string {
    return path.resolve(this.io.cwd ?? process.cwd(), file);
  }

  /** Standard input to its end; empty when there is none. */
  async readStdin(): Promise<string> {
    if (!this.io.stdin) return '';
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks).toString('utf8');
  }
}
