import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../functions/node/config.ts';
import { type WorkerEnv, workerConfig } from '../functions/workers/runtime.ts';

const workerEnv = (vars: Record<string, unknown>) =>
  ({
    HYPERDRIVE: { connectionString: 'postgres://unused' },
    ECPDS_SECRET_KEY: 'a2V5',
    ...vars,
  }) as unknown as WorkerEnv;

describe('the Node configuration', () => {
  it('has the documented defaults, and reads an empty variable as unset', () => {
    const config = parseConfig({ PORT: '', ECPDS_DEMO: '' });
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8443,
      dataDir: path.resolve('./data'),
      databaseUrl: null,
      trustProxy: false,
      demo: true,
      // Inside the data directory, so that a fresh install can put a file and see it delivered; the
      // portal's uploads are sources too.
      sourceRoots: [path.resolve('./data/outgoing'), path.resolve('./data/portal-uploads')],
      portal: { uploadDir: path.resolve('./data/portal-uploads') },
      sourceHosts: [],
      sourceTimeoutMs: 10_000,
      sweepSeconds: 60,
      maxBodyBytes: 10 * 1024 * 1024,
      metricsPublic: false,
      mover: {
        enabled: true,
        concurrency: 8,
        leaseMs: 60_000,
        heartbeatMs: 15_000,
        pollMs: 1000,
        drainMs: 30_000,
        fileRoots: [path.resolve('./data/delivered')],
      },
    });
    expect(config.mover.name).toMatch(/-\d+$/);
  });

  it('reads the mover settings, its heartbeat at most half its lease', () => {
    const config = parseConfig({
      ECPDS_MOVER: '0',
      ECPDS_MOVER_NAME: 'mover-a',
      ECPDS_MOVER_CONCURRENCY: '32',
      ECPDS_MOVER_LEASE_SECONDS: '10',
      ECPDS_MOVER_HEARTBEAT_SECONDS: '30',
      ECPDS_FILE_HOST_ROOTS: '/srv/out:/mnt/share',
    });
    expect(config.mover).toMatchObject({
      enabled: false,
      name: 'mover-a',
      concurrency: 32,
      leaseMs: 10_000,
      heartbeatMs: 5000,
      fileRoots: ['/srv/out', '/mnt/share'],
    });
    expect(() => parseConfig({ ECPDS_MOVER_CONCURRENCY: '0' })).toThrow(/ECPDS_MOVER_CONCURRENCY/);
  });

  it('reads flags, integers and lists', () => {
    const config = parseConfig({
      ECPDS_TRUST_PROXY: 'Yes',
      ECPDS_DEMO: 'off',
      PORT: '9000',
      ECPDS_SOURCE_ROOTS: '/srv/a, /srv/b:/srv/c',
      ECPDS_SOURCE_HOSTS: ' data.example.org , mirror:8080,',
      ECPDS_SWEEP_SECONDS: '0',
    });
    expect(config).toMatchObject({ trustProxy: true, demo: false, port: 9000, sweepSeconds: 0 });
    expect(config.sourceRoots).toEqual(['/srv/a', '/srv/b', '/srv/c', path.resolve('./data/portal-uploads')]);
    expect(config.sourceHosts).toEqual(['data.example.org', 'mirror:8080']);
  });

  it("keeps the portal's uploads where ECPDS_PORTAL_UPLOAD_DIR says, one of the source roots", () => {
    const config = parseConfig({ ECPDS_SOURCE_ROOTS: '/srv/a', ECPDS_PORTAL_UPLOAD_DIR: '/srv/a' });
    expect(config.portal.uploadDir).toBe('/srv/a');
    expect(config.sourceRoots).toEqual(['/srv/a']);
    expect(parseConfig({ ECPDS_DATA_DIR: '/var/lib/ecpds' }).portal.uploadDir).toBe('/var/lib/ecpds/portal-uploads');
  });

  it('names every wrong variable in one error', () => {
    const parse = () => parseConfig({ PORT: '70000', ECPDS_SWEEP_SECONDS: '1.5', ECPDS_DEMO: 'maybe' });
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(
      "PORT must be an integer from 0 to 65535, got '70000'; " +
        "ECPDS_DEMO must be a flag (expected 1/0 or true/false), got 'maybe'; " +
        "ECPDS_SWEEP_SECONDS must be an integer from 0 to 86400, got '1.5'",
    );
  });

  it('wants the TLS certificate and key together', () => {
    const parse = () => parseConfig({ TLS_CERT_FILE: '/c.pem' });
    expect(parse).toThrow('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
  });
});

describe('the Workers configuration', () => {
  it('reads the shared variables with the same rules as Node, numbers and booleans of `vars` too', () => {
    const config = workerConfig(
      workerEnv({
        ECPDS_MAX_BODY_BYTES: 2048,
        ECPDS_METRICS_PUBLIC: true,
        ECPDS_SOURCE_HOSTS: 'a.example, b.example',
        ECPDS_SOURCE_TIMEOUT_MS: '500',
      }),
    );
    expect(config).toMatchObject({
      ECPDS_MAX_BODY_BYTES: 2048,
      ECPDS_METRICS_PUBLIC: true,
      ECPDS_SOURCE_HOSTS: ['a.example', 'b.example'],
      ECPDS_SOURCE_TIMEOUT_MS: 500,
      ECPDS_NOTES_URL: null,
    });
  });

  it('refuses a wrong value by name, and a missing secret key', () => {
    expect(() => workerConfig(workerEnv({ ECPDS_MAX_BODY_BYTES: 'lots' }))).toThrow(
      "ECPDS_MAX_BODY_BYTES must be an integer from 1024 to 1073741824, got 'lots'",
    );
    expect(() => workerConfig(workerEnv({ ECPDS_SECRET_KEY: '' }))).toThrow('the ECPDS_SECRET_KEY secret is not set');
    expect(() => workerConfig(workerEnv({ ECPDS_NOTES_URL: 42n }))).toThrow(/^ECPDS_NOTES_URL: /);
  });

  it('reads the R2 buckets of sources as binding names, none by default', () => {
    expect(workerConfig(workerEnv({})).ECPDS_SOURCE_BUCKETS).toEqual([]);
    expect(workerConfig(workerEnv({ ECPDS_SOURCE_BUCKETS: 'SOURCES, $b_2' })).ECPDS_SOURCE_BUCKETS).toEqual([
      'SOURCES',
      '$b_2',
    ]);
    expect(() => workerConfig(workerEnv({ ECPDS_SOURCE_BUCKETS: 'SOURCES,my-bucket,2x' }))).toThrow(
      "ECPDS_SOURCE_BUCKETS must name bindings (comma separated identifiers), got 'my-bucket', '2x'",
    );
  });

  it('reads the store as one binding name and a key prefix, none by default', () => {
    expect(workerConfig(workerEnv({}))).toMatchObject({ ECPDS_STORE_BINDING: null, ECPDS_STORE_PREFIX: '' });
    expect(workerConfig(workerEnv({ ECPDS_STORE_BINDING: ' STORE ', ECPDS_STORE_PREFIX: '/ecpds/v1/' }))).toMatchObject(
      { ECPDS_STORE_BINDING: 'STORE', ECPDS_STORE_PREFIX: 'ecpds/v1' },
    );
    expect(() => workerConfig(workerEnv({ ECPDS_STORE_BINDING: 'my-store' }))).toThrow(
      "ECPDS_STORE_BINDING must name a binding (an identifier), got 'my-store'",
    );
    expect(() => workerConfig(workerEnv({ ECPDS_STORE_BINDING: 'A,B' }))).toThrow(
      "ECPDS_STORE_BINDING must name a binding (an identifier), got 'A,B'",
    );
    expect(() => workerConfig(workerEnv({ ECPDS_STORE_PREFIX: 'a\nb' }))).toThrow(
      'ECPDS_STORE_PREFIX must be a key prefix of at most 512 bytes without control characters',
    );
  });
});
