import fs from 'node:fs';
import path from 'node:path';
import type { NodeConfig } from './config.ts';

/** TLS_CERT_FILE/TLS_KEY_FILE, else a self-signed certificate made once and kept in the data dir. */
export async function loadTls(
  config: Pick<NodeConfig, 'dataDir' | 'tlsCertFile' | 'tlsKeyFile'>,
): Promise<{ cert: string; key: string }> {
  if (config.tlsCertFile && config.tlsKeyFile) {
    return { cert: fs.readFileSync(config.tlsCertFile, 'utf8'), key: fs.readFileSync(config.tlsKeyFile, 'utf8') };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  if (!fs.existsSync(certFile) || !fs.existsSync(keyFile)) {
    const { generate } = await import('selfsigned');
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + 825 * 24 * 3600 * 1000),
      extensions: [
        { name: 'basicConstraints', cA: false },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    } as never);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(keyFile, pems.private, { mode: 0o600 });
    fs.writeFileSync(certFile, pems.cert);
  }
  return { cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8') };
}
