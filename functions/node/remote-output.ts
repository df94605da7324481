import type { CliIo } from './cli-io.ts';

/** What the remote commands print: progress of a put, and plain tables. */

/** Results one line each on stdout (JSON with --json); on a terminal, a progress line on stderr. */
export function progressReporter(io: Pick<CliIo, 'stdout' | 'stderr'>, json: boolean, total: number) {
  const tty = !json && io.stderr.isTTY === true;
  let ok = 0;
  let failed = 0;
  const clear = () => tty && io.stderr.write('\r\x1b[K');
  const show = () => tty && io.stderr.write(`[${ok + failed}/${total}] ${ok} registered, ${failed} failed`);
  const emit = (record: object, line: string) => {
    clear();
    io.stdout.write(`${json ? JSON.stringify(record) : line}\n`);
    show();
  };
  return {
    ok(file: string, id: number, attempts: number) {
      ok++;
      emit({ file, ok: true, id, attempts }, `ok    ${file}  id=${id}`);
    },
    failed(file: string, status: number | null, error: string, attempts: number) {
      failed++;
      const reason = status === null ? error : `HTTP ${status}: ${error}`;
      emit({ file, ok: false, status, error, attempts }, `FAIL  ${file}  ${reason}`);
    },
    finish(destination: string) {
      clear();
      if (!json) io.stderr.write(`${ok} of ${total} file(s) registered for ${destination}, ${failed} failed.\n`);
      return failed;
    },
  };
}

export const when = (seconds: number | null) =>
  seconds === null ? '-' : new Date(seconds * 1000).toISOString().slice(0, 16).replace('T', ' ');

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
