import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { scaled } from '../time.ts';

export interface ServerProcess {
  /** Ends the server (SIGTERM to its process group, SIGKILL 5 s later), then removes its directory. */
  stop(): Promise<void>;
}

/**
 * Starts `command` in `dir` (its own, removed by stop), in a process group of its own, and resolves once it
 * takes connections on `port`; rejects with what it wrote if it exits first or never listens.
 */
export async function startServerProcess(
  command: string,
  args: string[],
  { dir, port }: { dir: string; port: number },
): Promise<ServerProcess> {
  const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const collect = (d: Buffer) => {
    output += d.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  let exited = false;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void done.then(() => {
    exited = true;
  });
  await waitForListening(
    port,
    () => exited,
    () => output,
  );
  return {
    async stop() {
      if (!exited) {
        process.kill(-child.pid!, 'SIGTERM');
        const late = setTimeout(() => !exited && process.kill(-child.pid!, 'SIGKILL'), 5_000);
        await done;
        clearTimeout(late);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once `port` takes connections; rejects with the server's output if it exits or never listens. */
export function waitForListening(port: number, exited: () => boolean, log: () => string, withinMs = 15_000) {
  const deadline = Date.now() + scaled(withinMs);
  return new Promise<void>((resolve, reject) => {
    const attempt = () => {
      if (exited()) return reject(new Error(`server on ${port} exited:\n${log()}`));
      if (Date.now() > deadline) return reject(new Error(`server not listening on ${port}:\n${log()}`));
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => setTimeout(attempt, 50));
    };
    attempt();
  });
}
