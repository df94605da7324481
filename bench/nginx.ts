import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sleep } from './support.ts';

export const NGINX = '/usr/sbin/nginx';

/**
 * Debian's nginx as a baseline: static files of `root` over TLS 1.3 with the given certificate and
 * cipher suite, on its own port, its configuration, pid and temporary files under `dir`. One worker
 * process, as the service is one Node process; `sendfile on` as static serving is set up (over TLS
 * without kernel TLS nginx writes through OpenSSL all the same).
 */
export async function startNginx(options: {
  dir: string;
  port: number;
  root: string;
  cert: string;
  key: string;
  cipher: string;
}) {
  const { dir, port } = options;
  fs.mkdirSync(dir, { recursive: true });
  const temp = (name: string) => `${name}_temp_path ${path.join(dir, name)};`;
  const conf = path.join(dir, 'nginx.conf');
  fs.writeFileSync(
    conf,
    [
      'daemon off;',
      'worker_processes 1;',
      `pid ${path.join(dir, 'nginx.pid')};`,
      'error_log stderr warn;',
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      '  sendfile on;',
      '  tcp_nopush on;',
      '  keepalive_requests 100000;',
      '  default_type application/octet-stream;',
      `  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp).join(' ')}`,
      '  server {',
      `    listen 127.0.0.1:${port} ssl;`,
      `    ssl_certificate ${options.cert};`,
      `    ssl_certificate_key ${options.key};`,
      '    ssl_protocols TLSv1.3;',
      `    ssl_conf_command Ciphersuites ${options.cipher};`,
      `    root ${options.root};`,
      '  }',
      '}',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(NGINX, ['-p', `${dir}/`, '-c', conf, '-e', 'stderr'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100 && workerOf(child.pid!) === null; i++) await sleep(50);
  if (workerOf(child.pid!) === null) throw new Error('nginx did not start its worker');
  return {
    child,
    base: `https://127.0.0.1:${port}`,
    /** The worker's pid: the process that serves, whose memory and CPU count. */
    worker: () => workerOf(child.pid!)!,
    async stop() {
      child.kill('SIGQUIT');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

function workerOf(master: number): number | null {
  try {
    const children = fs.readFileSync(`/proc/${master}/task/${master}/children`, 'utf8').trim();
    return children === '' ? null : Number(children.split(/\s+/)[0]);
  } catch {
    return null;
  }
}
