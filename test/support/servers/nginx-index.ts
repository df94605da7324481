import { requireTools } from '../tools.ts';
import { type NginxServer, startNginx } from './nginx-dav.ts';

/** nginx-dav-ext-module as Debian builds it (libnginx-mod-http-dav-ext): nginx's own dav module has no PROPFIND. */
export const DAV_EXT_MODULE = '/usr/lib/nginx/modules/ngx_http_dav_ext_module.so';

/** Why an nginx answering PROPFIND cannot run here, or null when it can. */
export function davExtMissing(): string | null {
  return requireTools('nginx', 'nginx-dav-ext');
}

export type NginxIndex = NginxServer;

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
export function startNginxIndex(options: NginxIndexOptions = {}): Promise<NginxIndex> {
  const dav = options.propfind
    ? ' dav_methods PUT DELETE MKCOL COPY MOVE; dav_ext_methods PROPFIND OPTIONS; dav_access user:rw group:r all:r;'
    : '';
  return startNginx('index', `autoindex on;${dav}`, {
    auth: options.auth,
    modules: options.propfind ? [DAV_EXT_MODULE] : [],
  });
}
