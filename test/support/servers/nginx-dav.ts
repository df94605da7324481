import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';
import { scaled } from '../time.ts';
import { requireTools } from '../tools.ts';

export const NGINX = '/usr/sbin/nginx';

/** Whether nginx (with its dav module, as Debian builds it) can run here; the run's summary names it if not. */
export function nginxAvailability(): { run: boolean; reason: string } {
  const reason = requireTools('nginx');
  return reason ? { run: false, reason } : { run: true, reason: '' };
}

export interface NginxDav {
  port: number;
  /** The directory the server's URLs map to. */
  root: string;
  /** Each request's method and path, from the access log. */
  requests(): { method: string; path: string }[];
  stop(): Promise<void>;
}

/**
 * nginx as a WebDAV server (its core dav module: PUT, DELETE, MKCOL, COPY, MOVE; files answer
 * HEAD), on a port of its own, with Basic authentication when `auth` is given. A PUT body is
 * spooled and only renamed into place once whole, as most WebDAV servers do.
 */
export async function startNginxDav(auth?: { user: string; password: string }): Promise<NginxDav> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-dav-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const port = await freePort();
  const log = path.join(dir, 'access.log');
  const realm = auth ? `auth_basic "dav"; auth_basic_user_file ${dir}/htpasswd;` : '';
  if (auth) fs.writeFileSync(path.join(dir, 'htpasswd'), `${auth.user}:{PLAIN}${auth.password}\n`);
  const asRoot = process.getuid?.() === 0;
  const temp = (name: string) => `${name}_temp_path ${dir}/${name};`;
  const conf = `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${asRoot ? 'user root root;' : ''}
events { worker_connections 64; }
http {
  log_format dav '$request_method $request_uri';
  access_log ${log} dav;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / {
      dav_methods PUT DELETE MKCOL COPY MOVE;
      dav_access user:rw group:r all:r;
      ${realm}
    }
  }
}
`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  let exited = false;
  const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void done.then(() => {
    exited = true;
  });
  await waitForListening(
    port,
    () => exited,
    () => stderr,
  );
  return {
    port,
    root,
    requests: () =>
      (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const [method, p] = line.split(' ');
          return { method: method!, path: p! };
        }),
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
