import fs from 'node:fs';
import * as apiClients from '../../core/api-clients/clients.ts';
import type { Ports } from '../../core/ports.ts';

/** `[API]` lines of the properties file become clients; existing usernames are never touched. */
export async function provisionProperties(ports: Ports, file: string) {
  const outcomes = await apiClients.provisionFromProperties(ports, fs.readFileSync(file, 'utf8'));
  for (const o of outcomes) {
    if (o.result === 'skipped') {
      ports.logger.warn('properties entry skipped', { file, line: o.line, reason: o.reason });
    } else if (o.result === 'created') {
      ports.logger.warn(
        'API client provisioned from a plaintext properties entry; ' +
          'this is deprecated, manage clients with `ecpds-edge client` or the console instead',
        { file, line: o.line, username: o.username },
      );
    }
  }
  return outcomes;
}

/** First start on an empty client store: one full-access client whose secret is printed once. */
export async function bootstrapAdmin(ports: Ports): Promise<string | null> {
  if ((await ports.repos.clients.count()) > 0) return null;
  const { secret } = await apiClients.create(ports, 'bootstrap', {
    username: 'admin',
    permissions: ['.*'],
    origin: 'bootstrap',
  });
  return secret;
}
