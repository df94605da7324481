import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import ssh2 from 'ssh2';

// A CommonJS module whose `utils` Node's ESM loader does not see as a named export.
const { utils } = ssh2;

/** The portal SFTP server's host key: its private key (OpenSSH PEM) and its fingerprint. */
export interface HostKey {
  privateKey: string;
  /** `SHA256:...`, as `ssh-keygen -l` and OpenSSH's first-connection prompt print it. */
  fingerprint: string;
}

export const HOST_KEY_FILE = path.join('portal-sftp', 'host_ed25519');

/**
 * The host key in `<data dir>/portal-sftp/host_ed25519`, generated (ed25519) on the first start and
 * kept: clients remember it, and a new one would look like a server in the middle. Written
 * owner-only, under a temporary name first so that a start cut short never leaves half a key.
 */
export function loadOrCreateHostKey(dataDir: string): HostKey {
  const file = path.join(dataDir, HOST_KEY_FILE);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const pair = newKeyPair();
    const temporary = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temporary, pair.private, { mode: 0o600 });
    fs.writeFileSync(`${file}.pub`, `${pair.public}\n`, { mode: 0o644 });
    fs.renameSync(temporary, file);
  }
  const privateKey = fs.readFileSync(file, 'utf8');
  const parsed = utils.parseKey(privateKey);
  if (parsed instanceof Error) throw new Error(`The SFTP host key ${file} cannot be read: ${parsed.message}`);
  return { privateKey, fingerprint: sshFingerprint(parsed.getPublicSSH()) };
}

/**
 * A new ed25519 pair that reads back. ssh2's generator drops a leading zero byte of the public key
 * (about 1 key in 300), which makes a key no client or parser takes: such a pair is made again.
 */
function newKeyPair() {
  for (let attempt = 0; attempt < 50; attempt++) {
    const pair = utils.generateKeyPairSync('ed25519', { comment: 'ecpds-edge portal' });
    if (!(utils.parseKey(pair.private) instanceof Error)) return pair;
  }
  throw new Error('could not generate an ed25519 host key');
}

/** A public key blob's fingerprint as OpenSSH prints it. */
export const sshFingerprint = (blob: Buffer) =>
  `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
