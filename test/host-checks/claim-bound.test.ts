import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CHECK_FREQUENCY_MS } from '../../core/host-checks/policy.ts';
import { rowsOf } from '../../db/client.ts';
import { restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * The bound over all movers on host checks and acquisition runs under way, with many movers claiming at the
 * same moment: on Postgres each claim runs on a connection of its own, and two that counted the places under
 * way at once would each take the last free one.
 */
let h: Harness;
let api: string;

beforeAll(async () => {
  h = await createHarness();
  api = await h.client('api-admin', ['.*']);
});
afterAll(() => h?.close());

const HOSTS = 6;
const CLAIMERS = 8;
const MOST = 2;

const underWay = async (table: 'host_checks' | 'acquisition_runs') =>
  Number(
    rowsOf<{ n: number }>(
      await h.db.execute(sql`select count(*)::int as n from ${sql.identifier(table)} where lease_until >= now()`),
    )[0]!.n,
  );

describe.each([1, 2, 3])('claims at once, round %i', (round) => {
  it(`never take more than ${MOST} host checks over all movers`, async () => {
    for (let i = 0; i < HOSTS; i++) {
      const host = { method: 'test' as const, check: true, checkFrequency: 3_600_000, checkFilename: 'c.tst' };
      await restoreDestination(h, api, `CB_CHECK_${round}_${i}`, [host], { start: false });
    }
    const repo = h.ports.repos.hostChecks;
    const claims = await Promise.all(
      Array.from({ length: CLAIMERS }, (_, i) => repo.claim(`m${i}`, 60_000, HOSTS, MOST, DEFAULT_CHECK_FREQUENCY_MS)),
    );
    expect(claims.flat()).toHaveLength(MOST);
    expect(await underWay('host_checks')).toBe(MOST);
    await h.db.execute(sql`update host_checks set claim = null, lease_until = null`);
  });

  it(`never take more than ${MOST} acquisition runs over all movers`, async () => {
    for (let i = 0; i < HOSTS; i++) {
      const host = {
        method: 'test' as const,
        type: 'Acquisition',
        nickname: `cb-acq-${round}-${i}`,
        dir: '/in',
        acquisitionFrequency: 3_600_000,
      };
      await restoreDestination(h, api, `CB_ACQ_${round}_${i}`, [host], { destination: { type: 0 } });
    }
    const repo = h.ports.repos.acquisition;
    const claims = await Promise.all(
      Array.from({ length: CLAIMERS }, (_, i) => repo.claim(`m${i}`, 60_000, HOSTS, MOST)),
    );
    expect(claims.flat()).toHaveLength(MOST);
    expect(await underWay('acquisition_runs')).toBe(MOST);
    await h.db.execute(sql`update acquisition_runs set mover = null, lease_until = null`);
  });
});
