import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runHostCheck } from '../../core/host-checks/check.ts';
import { checkIntervalMs, DEFAULT_CHECK_FREQUENCY_MS, isDue, nextCheckAt } from '../../core/host-checks/policy.ts';
import { rowsOf } from '../../db/client.ts';
import { startHostChecker } from '../../functions/node/host-checks.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';
import { checkedHost, resultOf } from './support.ts';

/** When hosts are checked: due every checkFrequency from the start of the last check, one check at a time per host. */
let h: Harness;
let api: string;

beforeAll(async () => {
  h = await createHarness();
  api = await h.client('api-admin', ['.*']);
}, scaled(60_000));
afterAll(() => h?.close());

const testHost = (data: string, over: Record<string, unknown> = {}) => ({
  method: 'test' as const,
  data,
  checkFilename: 'ecpds.tst',
  ...over,
});

it("the policy: the reference's 5 minutes when checkFrequency is 0 or unset, due from the last start", () => {
  expect(checkIntervalMs(0)).toBe(DEFAULT_CHECK_FREQUENCY_MS);
  expect(checkIntervalMs(null)).toBe(5 * 60_000);
  expect(checkIntervalMs(90_000)).toBe(90_000);
  const at = new Date('2026-12-07T10:00:00Z');
  expect(isDue(null, 1000, at)).toBe(true);
  expect(isDue(at, 1000, new Date(at.getTime() + 999))).toBe(false);
  expect(isDue(at, 1000, new Date(at.getTime() + 1000))).toBe(true);
  expect(nextCheckAt(at, 0)).toEqual(new Date(at.getTime() + 5 * 60_000));
});

it('a claim holds the host: no second claim until it ends, and none past the bound over every server', async () => {
  const a = await checkedHost(h, api, 'HC_CLAIM_A', testHost('', { checkFrequency: 60_000 }));
  const b = await checkedHost(h, api, 'HC_CLAIM_B', testHost('', { checkFrequency: 60_000 }));
  const repo = h.ports.repos.hostChecks;
  const first = await repo.claim('server-1', 60_000, 1, 1, DEFAULT_CHECK_FREQUENCY_MS);
  expect(first).toHaveLength(1);
  // The bound counts the check under way, whoever holds it.
  expect(await repo.claim('server-2', 60_000, 5, 1, DEFAULT_CHECK_FREQUENCY_MS)).toEqual([]);
  const second = await repo.claim('server-2', 60_000, 5, 5, DEFAULT_CHECK_FREQUENCY_MS);
  expect(second.map((c) => Number(c.host.hostId))).toEqual([a, b].filter((id) => id !== Number(first[0]!.host.hostId)));
  const held = Number(first[0]!.host.hostId);
  const result = { at: h.ports.clock(), ok: true, durationMs: 5, message: 'fine' };
  // Only the claim that holds it ends it.
  expect(await repo.finish('server-2', held, result)).toBe(false);
  expect(await repo.finish('server-1', held, result)).toBe(true);
  // Ended, it is not due again before its frequency.
  expect(await repo.claim('server-3', 60_000, 5, 5, DEFAULT_CHECK_FREQUENCY_MS)).toEqual([]);
  await h.db.execute(sql`update host_checks set claim = null, lease_until = null`);
});

it('due every checkFrequency, one check at a time per host across two servers', async () => {
  // Each check takes 300 ms (test.delay), longer than the 200 ms between checks: two servers polling
  // every 20 ms would overlap them, were the host not held by one check at a time.
  const hostId = await checkedHost(h, api, 'HC_SCHEDULE', testHost('test.delay = "300ms"', { checkFrequency: 200 }));
  const options = { concurrency: 2, pollMs: 20, timeoutMs: scaled(5_000), fileRoots: [] };
  const one = startHostChecker(h.ports, options);
  const two = startHostChecker(h.ports, options);
  try {
    await resultOf(h, 'HC_SCHEDULE', hostId, (c) => c.history.length >= 5, 30_000);
  } finally {
    await Promise.all([one.stop(), two.stop()]);
  }
  const c = (await resultOf(h, 'HC_SCHEDULE', hostId))!;
  const checks = [c.latest, ...c.history].reverse();
  expect(checks.every((r) => r.ok)).toBe(true);
  expect(checks[0]!.message).toBe('Wrote ecpds.tst (18 bytes); not removed: the test method has no remove');
  for (let i = 1; i < checks.length; i++) {
    const previous = checks[i - 1]!;
    const gap = checks[i]!.at.getTime() - previous.at.getTime();
    // Never before the previous check ended, nor before its frequency passed (a few ms of rounding allowed).
    expect(gap).toBeGreaterThanOrEqual(Math.max(200, previous.durationMs) - 5);
  }
});

it('a check is cut at its timeout, and a method with neither remove nor listing says why it cannot check', async () => {
  const methods = nodeTransferMethods({ fileRoots: [] });
  const host = {
    hostId: '1',
    module: 'test',
    host: 'localhost',
    login: '',
    passwdSealed: null,
    dir: '',
    data: 'test.delay = "10s"',
    maxConnections: null,
    retryCount: null,
    retryFrequency: null,
    network: null,
    nickname: null,
    checkFrequency: null,
  };
  const slow = await runHostCheck(h.ports, methods, { ...host, checkFilename: 'x.tst' }, 300);
  expect(slow).toMatchObject({ ok: false, message: 'Host check failed: Check timed out after 300 ms' });
  expect(slow.durationMs).toBeLessThan(scaled(2_000));
  const none = await runHostCheck(h.ports, methods, { ...host, checkFilename: null }, 300);
  expect(none).toMatchObject({
    ok: false,
    message: 'Host check failed: The test method cannot be checked without a checkFilename',
  });
  const rows = rowsOf<{ n: number }>(await h.db.execute(sql`select count(*)::int as n from host_checks`));
  expect(rows[0]!.n).toBeGreaterThan(0);
});
