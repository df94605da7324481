import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../functions/env.ts';
import { openStandalone } from '../../functions/runtimes/standalone.ts';
import { tempDir } from '../support/processes.ts';

describe('the fetch entries read their settings as the Node server does', () => {
  it.each([
    ['a certificate without its key', { TLS_CERT_FILE: '/etc/cert.pem' }],
    ['a key without its certificate', { TLS_KEY_FILE: '/etc/key.pem' }],
  ])('refuse %s before opening anything', async (_, tls) => {
    const dataDir = tempDir();
    const opened = openStandalone({ ECPDS_DATA_DIR: dataDir, ...tls }, { migrate: false });
    await expect(opened).rejects.toThrow(ConfigError);
    await expect(opened).rejects.toThrow('TLS_CERT_FILE and TLS_KEY_FILE must be given together');
    // No key generated, no database made.
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });
});
