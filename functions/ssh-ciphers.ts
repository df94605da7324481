import ssh2Constants from 'ssh2/lib/protocol/constants.js';
import { ConfigError } from './env.ts';

/**
 * The ciphers of `preferred` that `supported` holds, in the order of `preferred`. ssh2 refuses a
 * configuration that names a cipher it cannot run, and what it can run depends on the runtime's
 * crypto (Bun's, for one, lacks some of Node's OpenSSL names): a list written for Node must drop
 * those. None at all left is a configuration no client or server could ever use.
 */
export function offeredCiphers<T extends string>(preferred: readonly T[], supported: readonly string[]): T[] {
  const offered = preferred.filter((cipher) => supported.includes(cipher));
  if (offered.length === 0) {
    throw new ConfigError(
      `none of the SSH ciphers ${preferred.join(', ')} is available on this runtime ` +
        `(its crypto runs only: ${supported.length ? supported.join(', ') : 'none'})`,
    );
  }
  return offered;
}

/** `preferred` as ssh2 can run it here: its own list of supported ciphers reflects this runtime's crypto. */
export const runtimeCiphers = <T extends string>(preferred: readonly T[]) =>
  offeredCiphers(preferred, ssh2Constants.SUPPORTED_CIPHER);
