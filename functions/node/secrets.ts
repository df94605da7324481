import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SecretBox } from '../../core/common/crypto.ts';
import { ConfigError, type NodeConfig } from './config.ts';

/**
 * The AES-256-GCM key: ECPDS_SECRET_KEY, or for the embedded database a key generated on
 * first start into the data dir (mode 0600). A shared Postgres needs the key given, since
 * every instance must read what the others sealed.
 */
export function loadSecretBox(config: Pick<NodeConfig, 'secretKey' | 'databaseUrl' | 'dataDir'>): SecretBox {
  if (config.secretKey) return checked(config.secretKey, 'ECPDS_SECRET_KEY');
  if (config.databaseUrl) {
    throw new ConfigError(
      'ECPDS_SECRET_KEY is required with DATABASE_URL (32 random bytes, base64; e.g. `openssl rand -base64 32`). ' +
        'Every instance sharing the database needs the same key.',
    );
  }
  const file = path.join(config.dataDir, 'secret.key');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(config.dataDir, { recursive: true });
    fs.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return checked(fs.readFileSync(file, 'utf8').trim(), file);
}

function checked(base64: string, source: string): SecretBox {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length !== 32 || bytes.toString('base64') !== base64.trim()) {
    throw new ConfigError(`${source} must hold 32 bytes in base64`);
  }
  return new SecretBox(new Uint8Array(bytes));
}
