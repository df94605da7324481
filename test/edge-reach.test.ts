import { describe, expect, it } from 'vitest';
import type { DisseminationHost } from '../core/dissemination/ports.ts';
import { edgeCanReach, isPrivateHost, whyEdgeCannotReach } from '../core/dissemination/reach.ts';

/** Which hosts a Worker delivers to, case by case (a pure function: no database, no network). */
const host = (over: Partial<DisseminationHost>): DisseminationHost => ({
  hostId: '1',
  module: 's3',
  host: 'storage.example.org',
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
const tests = { allowPrivate: true };

describe('the edge reaches', () => {
  it('s3 on the Internet, by network label or code, any case', () => {
    for (const network of ['Internet', 'I', 'internet', ' INTERNET ', 'i']) {
      expect(whyEdgeCannotReach(host({ network }), strict)).toBeNull();
    }
  });

  it('s3 at AWS (no host name), at s3.url, or at the host with s3.scheme', () => {
    expect(edgeCanReach(host({ host: '' }), strict)).toBe(true);
    expect(edgeCanReach(host({ host: '', data: 's3.url = "https://minio.example.org:9000/base"' }), strict)).toBe(true);
    expect(edgeCanReach(host({ host: 'objects.example.org:9000', data: 's3.scheme = "http"' }), strict)).toBe(true);
  });

  it('http only with http.scheme = https', () => {
    expect(edgeCanReach(host({ module: 'http', data: 'http.scheme = "https"' }), strict)).toBe(true);
    expect(edgeCanReach(host({ module: 'http', data: 'http.scheme = "HTTPS"' }), strict)).toBe(true);
    expect(whyEdgeCannotReach(host({ module: 'http' }), strict)).toBe('http.scheme is not https');
    expect(whyEdgeCannotReach(host({ module: 'http', data: 'http.scheme = "http"' }), strict)).toBe(
      'http.scheme is not https',
    );
  });

  it('an R2 bucket bound to the Worker, whatever its network and host', () => {
    expect(edgeCanReach(host({ module: 'r2', network: null, host: 'localhost' }), strict)).toBe(true);
    expect(edgeCanReach(host({ module: 'r2', network: 'LAN' }), strict)).toBe(true);
  });
});

describe('the edge does not reach', () => {
  it('methods that need sockets or a file system, or no method at all', () => {
    for (const module of ['sftp', 'ftp', 'ftps', 'file', 'test']) {
      expect(whyEdgeCannotReach(host({ module }), strict)).toBe(`the ${module} method needs a Node mover`);
    }
    expect(whyEdgeCannotReach(host({ module: null }), strict)).toBe('the none method needs a Node mover');
  });

  it('networks other than the Internet, or none', () => {
    for (const network of ['LAN', 'L', 'RMDCN', 'Internet2', '', null]) {
      expect(whyEdgeCannotReach(host({ network }), tests)).toMatch(/is not the Internet$/);
    }
  });

  it('private and loopback addresses, in s3.url or the host, unless allowed for tests', () => {
    const cases = [
      host({ host: '127.0.0.1:9000' }),
      host({ host: 'localhost' }),
      host({ host: '', data: 's3.url = "http://10.1.2.3:9000"' }),
      host({ host: '', data: 's3.url = "http://[::1]:9000"' }),
      host({ module: 'http', host: '192.168.1.20', data: 'http.scheme = "https"' }),
      host({ module: 'http', host: '[fd00::5]:8443', data: 'http.scheme = "https"' }),
    ];
    for (const h of cases) {
      expect(whyEdgeCannotReach(h, strict)).toMatch(/is a private or loopback address$/);
      expect(whyEdgeCannotReach(h, tests)).toBeNull();
    }
  });

  it('an s3.url that is no URL, an http host without a name', () => {
    expect(whyEdgeCannotReach(host({ data: 's3.url = "not a url"' }), strict)).toBe('s3.url not a url is not a URL');
    expect(whyEdgeCannotReach(host({ module: 'http', host: '', data: 'http.scheme = "https"' }), strict)).toBe(
      'the host has no name',
    );
  });
});

describe('isPrivateHost', () => {
  it.each([
    ['127.0.0.1', true],
    ['127.1', true],
    ['2130706433', true],
    ['0x7f.0.0.1', true],
    ['0.0.0.0', true],
    ['10.0.0.1', true],
    ['172.16.0.1', true],
    ['172.31.255.255', true],
    ['172.32.0.1', false],
    ['172.15.0.1', false],
    ['192.168.0.1', true],
    ['192.169.0.1', false],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['100.127.0.1', true],
    ['100.128.0.1', false],
    ['8.8.8.8', false],
    ['::1', true],
    ['::', true],
    ['0:0:0:0:0:0:0:1', true],
    ['fc00::1', true],
    ['fd12:3456::1', true],
    ['fe80::1', true],
    ['febf::1', true],
    ['fec0::1', false],
    ['::ffff:127.0.0.1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:8.8.8.8', false],
    ['2001:db8::1', false],
    ['2606:4700::1111', false],
    ['localhost', true],
    ['LOCALHOST.', true],
    ['s3.localhost', true],
    ['printer.local', true],
    ['db.internal', true],
    ['mover-box', true],
    ['', true],
    ['example.org', false],
    ['s3.eu-west-1.amazonaws.com', false],
    ['example.org.', false],
  ])('%s → %s', (name, expected) => {
    expect(isPrivateHost(name)).toBe(expected);
  });
});
