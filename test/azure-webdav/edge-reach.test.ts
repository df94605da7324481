import { describe, expect, it } from 'vitest';
import type { DisseminationHost } from '../../core/dissemination/ports.ts';
import { EDGE_MODULES, whyEdgeCannotReach } from '../../core/dissemination/reach.ts';

const host = (over: Partial<DisseminationHost>): DisseminationHost => ({
  hostId: '1',
  module: 'azure',
  host: 'account.blob.core.windows.net',
  login: '',
  passwdSealed: null,
  dir: '',
  data: '',
  maxConnections: null,
  retryCount: null,
  retryFrequency: null,
  network: 'Internet',
  ...over,
});
const strict = { allowPrivate: false };

describe('the edge and the azure and webdav methods (fetch only, so the Worker has them)', () => {
  it('are edge modules', () => {
    expect(EDGE_MODULES).toEqual(expect.arrayContaining(['azure', 'webdav']));
  });

  it('azure: the account endpoint, or azure.url; on the Internet only', () => {
    expect(whyEdgeCannotReach(host({}), strict)).toBeNull();
    const emulator = host({ host: '', data: 'azure.url = "http://127.0.0.1:10000/devstoreaccount1"' });
    expect(whyEdgeCannotReach(emulator, strict)).toBe('127.0.0.1 is a private or loopback address');
    expect(whyEdgeCannotReach(host({ host: '', data: 'azure.url = "::"' }), strict)).toBe('azure.url :: is not a URL');
    expect(whyEdgeCannotReach(host({ network: 'LAN' }), strict)).toBe('network LAN is not the Internet');
  });

  it('webdav: over https (its default) only, as Basic authentication would go in clear', () => {
    const dav = (data: string) => host({ module: 'webdav', host: 'dav.example.org', data });
    expect(whyEdgeCannotReach(dav(''), strict)).toBeNull();
    expect(whyEdgeCannotReach(dav('webdav.scheme = "http"'), strict)).toBe('webdav.scheme is not https');
  });
});
