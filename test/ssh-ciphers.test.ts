import ssh2Constants from 'ssh2/lib/protocol/constants.js';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../functions/env.ts';
import { offeredCiphers, runtimeCiphers } from '../functions/ssh-ciphers.ts';

const PREFERRED = [
  'aes128-gcm@openssh.com',
  'aes256-gcm@openssh.com',
  'chacha20-poly1305@openssh.com',
  'aes128-ctr',
  'aes256-ctr',
];

describe('offeredCiphers', () => {
  it('keeps the preferred order and drops what the runtime cannot run', () => {
    // As on a runtime whose crypto lacks chacha20 and one of the GCM ciphers.
    const supported = ['aes256-ctr', 'aes128-ctr', 'aes128-gcm@openssh.com', 'aes256-cbc'];
    expect(offeredCiphers(PREFERRED, supported)).toEqual(['aes128-gcm@openssh.com', 'aes128-ctr', 'aes256-ctr']);
  });

  it('keeps every preferred cipher the runtime runs', () => {
    expect(offeredCiphers(PREFERRED, [...PREFERRED].reverse())).toEqual(PREFERRED);
  });

  it('never answers an empty list: a configuration error names what is missing', () => {
    const refused = () => offeredCiphers(PREFERRED, ['aes256-cbc', '3des-cbc']);
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/none of the SSH ciphers aes128-gcm@openssh\.com, .*aes256-ctr is available/);
    expect(refused).toThrow(/runs only: aes256-cbc, 3des-cbc/);
    expect(() => offeredCiphers(PREFERRED, [])).toThrow(/runs only: none/);
  });
});

describe('runtimeCiphers', () => {
  it('keeps what ssh2 says this runtime runs: on Node, all of them', () => {
    expect(ssh2Constants.SUPPORTED_CIPHER).toContain('aes128-gcm@openssh.com');
    expect(runtimeCiphers(PREFERRED)).toEqual(PREFERRED.filter((c) => ssh2Constants.SUPPORTED_CIPHER.includes(c)));
  });
});
