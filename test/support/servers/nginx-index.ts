import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../processes.ts';
import { requireTools } from '../tools.ts';
import { NGINX, waitForListening } from './nginx-dav.ts';

/** nginx-dav-ext-module as Debian builds it (libnginx-mod-http-dav-ext): nginx's own dav module has no PROPFIND. */
export const DAV_EXT_MODULE = '/usr/lib/nginx/modules/ngx_http_dav_ext_module.so';

/** Why an nginx answering PROPFIND cannot run here, or null when it can. */
export function davExtMissing(): string | null {
  return requireTools('nginx', 'nginx-dav-ext');
}

export interface NginxIndex {
  port: number;
  /** The directory the server's URLs map to. */
  root: string;
  /** Each request's method and path, from the access log. */
  requests(): { method: string; path: string }[];
  stop(): Promise<void>;
}

export interface NginxIndexOptions {
  /** Basic authentication for every URL. */
  auth?: { user: string; password: string };
  /** Also a WebDAV server answering PROPFIND (needs DAV_EXT_MODULE). */
  propfind?: boolean;
}

/**
 * nginx serving a directory as acquisition hosts do: an index page for each directory (`autoindex on`,
 * unless it holds an `index.html`), files with their Content-Length and Last-Modified, and with `propfind`
 * the WebDAV methods and PROPFIND as well.
 */
export async function startNginxIndex(options: NginxIndexOptions = {}): Promise<NginxIndex> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-index-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const port = await freePort();
  const log = path.join(dir, 'access.log');
  if (options.auth)
    fs.writeFileSync(path.join(dir, 'htpasswd'), `${options.auth.user}:{PLAIN}${options.auth.password}\n`);
  fs.writeFileSync(path.join(dir, 'nginx.conf'), nginxConf(dir, root, port, options));
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
    requests: () => accessLog(log),
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

function nginxConf(dir: string, root: string, port: number, options: NginxIndexOptions) {
  const realm = options.auth ? `auth_basic "index"; auth_basic_user_file ${dir}/htpasswd;` : '';
  const dav = options.propfind
    ? 'dav_methods PUT DELETE MKCOL COPY MOVE; dav_ext_methods PROPFIND OPTIONS; dav_access user:rw group:r all:r;'
    : '';
  const temp = (name: string) => `${name}_temp_path ${dir}/${name};`;
  return `
${options.propfind ? `load_module ${DAV_EXT_MODULE};` : ''}
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
${process.getuid?.() === 0 ? 'user root root;' : ''}
events { worker_connections 256; }
http {
  log_format index '$request_method $request_uri';
  access_log ${dir}/access.log index;
  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join('\n  ')}
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / {
      autoindex on;
      ${dav}
      ${realm}
    }
  }
}
`;
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
