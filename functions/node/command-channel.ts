import type { Socket } from 'node:net';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';

/**
 * The channel through which a command line hands a command to the server holding the embedded
 * database (PGlite admits one process): a Unix socket in `<data dir>/cli/`, a directory only the
 * server's user may enter, and a token beside it (readable by that user only) that the first line
 * must carry, so a socket reachable anyway (systems that ignore a socket's own mode) admits no one
 * else. One JSON line asks; JSON lines answer, `{"stdout"}` and `{"stderr"}` as the command writes
 * them, then `{"exit"}`.
 */

export const channelDir = (dataDir: string) => path.join(dataDir, 'cli');
export const socketPath = (dataDir: string) => path.join(channelDir(dataDir), 'socket');
export const tokenPath = (dataDir: string) => path.join(channelDir(dataDir), 'token');

/** sun_path's room (108 bytes with its NUL on Linux, 104 on macOS and the BSDs). */
export const MAX_SOCKET_PATH = process.platform === 'linux' ? 107 : 103;

/** A request is a command line, never large; a longer first line is not one. */
export const MAX_REQUEST_BYTES = 64 * 1024;

export interface CommandRequest {
  version: string;
  token: string;
  argv: string[];
}

export type CommandAnswer = { stdout: string } | { stderr: string } | { exit: number };

/** Calls `line` with each newline-terminated line received; false from it stops reading. */
export function readLines(socket: Socket, limit: number, line: (text: string) => boolean, tooLong: () => void) {
  let pending = '';
  // A character split between two chunks is decoded once whole.
  const decoder = new StringDecoder('utf8');
  const onData = (chunk: Buffer) => {
    pending += decoder.write(chunk);
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
      const text = pending.slice(0, end);
      pending = pending.slice(end + 1);
      if (!line(text)) return socket.off('data', onData);
    }
    if (pending.length > limit) {
      socket.off('data', onData);
      tooLong();
    }
  };
  socket.on('data', onData);
}
