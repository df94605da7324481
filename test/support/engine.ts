import { expect } from 'vitest';
import { setDestinationStatus } from '../../core/dissemination/operator.ts';
import type { Harness } from './harness.ts';

/** A dissemination host for `restoreDestination`: its method's module name and the fields that matter. */
export interface TestHost {
  method: 'file' | 'test' | 'sftp' | 'ftp' | 'ftps' | 's3' | 'http';
  host?: string;
  login?: string;
  passwd?: string;
  dir?: string;
  data?: string;
  maxConnections?: number;
  retryCount?: number;
  retryFrequency?: number;
  networkName?: string;
  networkCode?: string;
}

let hostids = 5000;
const methodEntry = (name: string) => ({
  name,
  ectransModuleName: name,
  value: null,
  restrict: false,
  resolve: false,
  comment: null,
  active: true,
  ectransModule: { name, classe: null, archive: null, active: true },
});

/**
 * Restores a destination with its dissemination hosts (primary first) through the API, as an
 * operator would, and starts it unless `start` is false.
 */
export async function restoreDestination(
  h: Harness,
  auth: string,
  name: string,
  hosts: TestHost[],
  options: { destination?: Record<string, unknown>; start?: boolean } = {},
) {
  const methods = [...new Set(hosts.map((x) => x.method))].map(methodEntry);
  const associations = hosts.map(({ method, ...fields }, priority) => ({
    priority,
    host: {
      hostid: ++hostids,
      nickname: `${name.toLowerCase()}-${priority}`,
      host: 'localhost',
      login: '',
      passwd: null,
      dir: '',
      data: '',
      type: 'Dissemination',
      active: true,
      networkName: 'Internet',
      networkCode: 'I',
      transferMethodName: method,
      maxConnections: -1,
      ...fields,
    },
  }));
  const destination = { name, countryIso: 'gb', type: 1, maxConnections: -1, ...options.destination };
  const r = await h.call('PUT', '/v1/destination/backup', {
    auth,
    body: { backup: { destinations: [{ destination, associations }], methods } },
  });
  expect(r.status, r.text).toBe(200);
  if (options.start !== false) await setDestinationStatus(h.ports, 'test', name, 'start');
}

/** Waits until `check` answers something other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000, what = 'condition') {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
