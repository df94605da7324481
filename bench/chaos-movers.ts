import { type ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './support.ts';

/**
 * The `ecpds-edge mover` processes of `npm run chaos`, and what is done to them: SIGKILL (and a
 * new one in its place), SIGSTOP then SIGCONT. As a supervisor would, it starts again a mover
 * that could not start (Postgres away); one that exits by itself once started is reported. Each
 * logs to a file of its own under `logDir`.
 */
export function moverFleet(options: {
  count: number;
  env: NodeJS.ProcessEnv;
  logDir: string;
  onCrash: (why: string) => void;
}) {
  const movers: ChildProcess[] = [];
  const signalled = new Set<ChildProcess>();
  const paused = new Set<ChildProcess>();
  const counts = { kills: 0, pauses: 0, failedStarts: 0 };
  let spawned = 0;

  const start = (): ChildProcess => {
    const name = `chaos-${++spawned}`;
    const logFile = path.join(options.logDir, `${name}.log`);
    const output = fs.openSync(logFile, 'a');
    const args = ['functions/bin/ecpds-edge.mjs', 'mover', '--name', name, '--concurrency', '8'];
    const mover = spawn(process.execPath, args, { cwd: ROOT, env: options.env, stdio: ['ignore', output, output] });
    fs.closeSync(output);
    mover.once('exit', (code, signal) => {
      if (signalled.has(mover)) return;
      const logged = fs.readFileSync(logFile, 'utf8');
      if (logged.includes('"msg":"mover started"')) {
        const last = logged.trim().split('\n').slice(-12).join('\n');
        options.onCrash(`mover ${name} exited by itself (${code ?? signal}):\n${last}`);
        return;
      }
      counts.failedStarts++;
      setTimeout(() => {
        if (movers.includes(mover) && !signalled.has(mover)) movers[movers.indexOf(mover)] = start();
      }, 500);
    });
    return mover;
  };
  for (let i = 0; i < options.count; i++) movers.push(start());
  const anyRunning = () => {
    const running = movers.filter((m) => !paused.has(m));
    return running[randomInt(running.length)]!;
  };

  return {
    counts,
    /** SIGKILLs a mover that is not paused, and starts another in its place. */
    kill() {
      const victim = anyRunning();
      signalled.add(victim);
      victim.kill('SIGKILL');
      movers[movers.indexOf(victim)] = start();
      counts.kills++;
    },
    /** SIGSTOPs a mover that is not paused, and SIGCONTs it `ms` later. */
    pause(ms: number) {
      const victim = anyRunning();
      victim.kill('SIGSTOP');
      paused.add(victim);
      counts.pauses++;
      setTimeout(() => {
        victim.kill('SIGCONT');
        paused.delete(victim);
      }, ms);
    },
    /** Resumes the paused ones, then SIGTERM to all (SIGKILL after 10 s). */
    async stop() {
      for (const m of paused) m.kill('SIGCONT');
      for (const m of movers) signalled.add(m);
      await Promise.all(movers.map(stopMover));
    },
    /** Whatever state they are in (a failed run). */
    killAll() {
      for (const m of movers) {
        signalled.add(m);
        m.kill('SIGCONT');
        m.kill('SIGKILL');
      }
    },
  };
}

async function stopMover(mover: ChildProcess) {
  if (mover.exitCode !== null || mover.signalCode !== null) return;
  const exited = new Promise((resolve) => mover.once('exit', resolve));
  mover.kill('SIGTERM');
  const timer = setTimeout(() => mover.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
