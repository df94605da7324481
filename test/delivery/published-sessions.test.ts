import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClaimRequest, claimTransfers } from '../../core/dissemination/claims.ts';
import { hostSessionLedger } from '../../core/dissemination/host-sessions.ts';
import { hostSessions } from '../../db/schema.ts';
import { createHarness, type Harness } from '../support/harness.ts';

/**
 * The sessions movers publish per host, on the database the suite runs on (PGlite, or Postgres
 * with TEST_DATABASE_URL): what a mover's ledger writes, and what a claim counts of it.
 */
let h: Harness;
let pipeline: string;
let root: string;
const T0 = new Date('2031-03-01T12:00:00.000Z');
let now = T0;

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-published-sessions-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  h.ports.clock = () => now;
  pipeline = await h.client('pipeline', ['datafile.*']);
});
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

let destinations = 0;
async function destinationWith(files: number) {
  const name = `SESSIONS_${++destinations}`;
  await h.addDestination(name);
  for (let i = 0; i < files; i++) {
    const query = new URLSearchParams({ destination: name, source: path.join(root, 'a.grib'), target: `f${i}` });
    const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: pipeline });
    expect(r.status, r.text).toBe(200);
  }
  return name;
}
const claim = (destination: string, over: Partial<ClaimRequest>) =>
  claimTransfers(h.ports, {
    destination,
    hostId: 'H',
    mover: 'm1',
    destinationMax: -1,
    hostMax: -1,
    leaseMs: 60_000,
    wanted: 10,
    ...over,
  });
const publish = (mover: string, hostId: string, sessions: number, leaseMs = 60_000) =>
  h.ports.repos.dissemination.publishSessions({
    mover,
    held: [{ hostId, sessions }],
    leaseUntil: new Date(now.getTime() + leaseMs),
  });
const rowsOf = async (mover: string) =>
  (await h.db.select().from(hostSessions).where(eq(hostSessions.mover, mover))).map((r) => [r.hostId, r.sessions]);

describe('a claim counts the sessions other movers hold open to the host', () => {
  it('counts each other mover for the more of its attempts and its sessions, the claimer for its attempts', async () => {
    const name = await destinationWith(8);
    // m2 keeps two sessions open to the host (idle: it sends nothing now).
    await publish('m2', 'HA', 2);
    expect(await claim(name, { hostId: 'HA', hostMax: 3 })).toHaveLength(1);
    expect(await claim(name, { hostId: 'HA', hostMax: 3 })).toHaveLength(0);
    // m2 reuses its own: its sessions are not counted against it, m1's attempt is.
    expect(await claim(name, { hostId: 'HA', hostMax: 3, mover: 'm2' })).toHaveLength(2);
    // m1: one attempt, no session published; m2: two attempts on its two sessions.
    expect(await claim(name, { hostId: 'HA', hostMax: 4, mover: 'm3' })).toHaveLength(1);
    // More sessions than attempts: the sessions count.
    await publish('m2', 'HA', 3);
    expect(await claim(name, { hostId: 'HA', hostMax: 6, mover: 'm4' })).toHaveLength(1);
  });

  it('ignores sessions under a lease that lapsed, and those to other hosts', async () => {
    const name = await destinationWith(4);
    await publish('m2', 'HB', 2, -1);
    await publish('m3', 'HC', 2);
    expect(await claim(name, { hostId: 'HB', hostMax: 2 })).toHaveLength(2);
  });
});

describe("a mover's ledger of its sessions", () => {
  it('counts a session before it opens, writes it off after it closed, and renews its lease', async () => {
    const ledger = hostSessionLedger(h.ports, 'ledger-1', 60_000);
    // Openings at the same time: whatever order the writes run in, the last one holds every session.
    await Promise.all([ledger.opening('H1'), ledger.opening('H1'), ledger.opening('H2')]);
    expect(await rowsOf('ledger-1')).toEqual(
      expect.arrayContaining([
        ['H1', 2],
        ['H2', 1],
      ]),
    );
    expect(ledger.idleAllowanceMs()).toBeGreaterThan(40_000);

    ledger.closed('H1');
    ledger.closed('H2');
    await ledger.settle();
    expect(await rowsOf('ledger-1')).toEqual([['H1', 1]]);

    now = new Date(T0.getTime() + 30_000);
    await ledger.renew();
    const [row] = await h.db
      .select()
      .from(hostSessions)
      .where(and(eq(hostSessions.mover, 'ledger-1'), eq(hostSessions.hostId, 'H1')));
    expect(row?.leaseUntil).toEqual(new Date(T0.getTime() + 90_000));

    ledger.closed('H1');
    await ledger.settle();
    expect(await rowsOf('ledger-1')).toEqual([]);
    now = T0;
  });

  it('refuses a session it cannot count, and keeps none idle once its lease would lapse', async () => {
    const ledger = hostSessionLedger(h.ports, 'ledger-2', 60_000);
    const publishSessions = h.ports.repos.dissemination.publishSessions;
    h.ports.repos.dissemination.publishSessions = async () => {
      throw new Error('connection lost');
    };
    try {
      await expect(ledger.opening('H1')).rejects.toThrow('Cannot record a new session to host H1: connection lost');
      expect(ledger.held('H1')).toBe(0);
      expect(ledger.idleAllowanceMs()).toBeLessThanOrEqual(0);
    } finally {
      h.ports.repos.dissemination.publishSessions = publishSessions;
    }
    expect(await rowsOf('ledger-2')).toEqual([]);
  });
});
