import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';
import { requireTools } from '../tools.ts';
import { startServerProcess } from './server-process.ts';

export const NGINX = '/usr/sbin/nginx';

/** Whether nginx (with its dav module, as Debian builds it) can run here; the run's summary names it if not. */
export function nginxAvailability(): { run: boolean; reason: string } {
  const reason = requireTools('nginx');
  return reason ? { run: false, reason } : { run: true, reason: '' };
}

export interface NginxServer {
  port: number;
  /** The directory the server's URLs map to. */
  root: string;
  /** Each request's method and path, from the access log. */
  requests(): { method: string; path: string }[];
  stop(): Promise<void>;
}

export type NginxDav = NginxServer;

/**
 * nginx as a WebDAV server (its core dav module: PUT, DELETE, MKCOL, COPY, MOVE; files answer
 * HEAD), on a port of its own, with Basic authentication when `auth` is given. A PUT body is
 * spooled and only renamed into place once whole, as most WebDAV servers do.
 */
export function startNginxDav(auth?: { user: string; password: string }): Promise<NginxDav> {
  return startNginx('dav', 'dav_methods PUT DELETE MKCOL COPY MOVE; dav_access user:rw group:r all:r;', { auth });
}

/**
 * nginx on a port of its own serving the `root` of a new directory (removed by stop), `location /` as
 * `directives` say, behind Basic authentication when `auth` is given, with `modules` loaded.
 */
export async function startNginx(
  name: string,
  directives: string,
  options: { auth?: { user: string; password: string }; modules?: string[] } = {},
): Promise<NginxServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ecpds-${name}-`));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const port = await freePort();
  const log = path.join(dir, 'access.log');
  const { auth } = options;
  const realm = auth ? `auth_basic "${name}"; auth_basic_user_file ${dir}/htpasswd;` : '';
  if (auth) fs.writeFileSync(path.join(dir, 'htpasswd'), `${auth.user}:{PLAIN}${auth.password}\n`);
  const temp = (tempName: string) => `${tempName}_temp_path ${dir}/${tempName};`;
  const conf = `
${(options.modules ?? []).map((module) => `load_module ${module};`).join('\n')}
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${process.getuid?.() === 0 ? 'user root root;' : ''}
events { worker_connections 256; }
http {
  log_format requests '$request_method $request_uri';
  access_log ${log} requests;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / {
      ${directives}
      ${realm}
    }
  }
}
`;
  fs.writeFileSync(path.join(dir, 'nginx.conf'), conf);
  const server = await startServerProcess(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { dir, port });
  return { port, root, requests: () => accessLog(log), stop: () => server.stop() };
}

function accessLog(log: string) {
  return (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [method, p] = line.split(' ');
      return { method: method!, path: p! };
    });
}
