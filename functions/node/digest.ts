import * as nodeCrypto from 'node:crypto';
import type { Sha256Base64 } from '../../core/common/crypto.ts';

/**
 * Node's native SHA-256 for the secret check of every authenticated request: about 0.3 µs
 * against 2 µs for the pure one in core. `crypto.hash` came with Node 20.12; before it,
 * createHash (which costs a hash object per call).
 */
export const nativeSha256Base64: Sha256Base64 =
  typeof nodeCrypto.hash === 'function'
    ? (text) => nodeCrypto.hash('sha256', text, 'base64')
    : (text) => nodeCrypto.createHash('sha256').update(text, 'utf8').digest('base64');
