import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, asc, desc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapWebAdmin } from '../../core/console/sign-in.ts';
import { changePriority } from '../../core/dissemination/priority.ts';
import { auditLog, dataTransfers, transferHistory } from '../../db/schema.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { scaled } from '../support/time.ts';

/**
 * A transfer's priority changed by an operator in the console (through `app.request()`), and by
 * the operation itself, on the database the suite runs on.
 */
let h: Harness;
let root: string;
let pipeline: string;

class Agent {
  readonly jar = new Map<string, string>();
  async request(method: string, url: string, form?: Record<string, string>) {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const body = form && new URLSearchParams(form);
    const res = await h.app.request(`https://localhost${url}`, {
      method,
      body,
      headers: {
        ...(cookie && { cookie }),
        ...(body && { 'content-type': 'application/x-www-form-urlencoded' }),
      },
    });
    for (const line of res.headers.getSetCookie()) {
      const [, name, value] = /^([^=]+)=([^;]*)/.exec(line)!;
      if (value === '' || /max-age=0\b/i.test(line)) this.jar.delete(name!);
      else this.jar.set(name!, value!);
    }
    return { status: res.status, text: await res.text(), location: res.headers.get('location') };
  }
  get = (url: string) => this.request('GET', url);
  async submit(from: string, action: string, form: Record<string, string> = {}) {
    const page = await this.get(from);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
    expect(csrf, `${from} has a CSRF field`).toBeTruthy();
    return this.request('POST', action, { csrf: csrf!, ...form });
  }
}

let admin: Agent;
beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-priority-')));
  fs.writeFileSync(path.join(root, 'a.grib'), 'grib!');
  h = await createHarness({ sourceRoots: [root] });
  pipeline = await h.client('pipeline', ['datafile.*']);
  const password = (await bootstrapWebAdmin(h.ports))!;
  admin = new Agent();
  const r = await admin.submit('/console/login', '/console/login', { username: 'admin', password });
  expect([r.status, r.location]).toEqual([303, '/console/clients']);
}, scaled(90_000));
afterAll(async () => {
  await h.close();
  fs.rmSync(root, { recursive: true, force: true });
});

let files = 0;
async function put(destination: string) {
  const query = new URLSearchParams({ destination, source: path.join(root, 'a.grib'), target: `p${++files}` });
  const r = await h.call('GET', `/v1/datafile/put?${query}`, { auth: pipeline });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return { transferId: t!.id, dataFileId: r.json.id as number };
}
const row = async (id: number) => (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!;
const lastHistory = async (id: number) =>
  (
    await h.db.select().from(transferHistory).where(eq(transferHistory.transferId, id)).orderBy(asc(transferHistory.id))
  ).at(-1)!;
const auditOf = (target: string) =>
  h.db
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.action, 'change transfer priority'), eq(auditLog.target, target)))
    .orderBy(desc(auditLog.id));

describe('changing the priority of a transfer', () => {
  it('in the console: the form sets it, with a history row in the same status and an audit row', async () => {
    await h.addDestination('PRIO_CONSOLE');
    const { transferId: id } = await put('PRIO_CONSOLE');
    const from = '/console/monitor/destinations/PRIO_CONSOLE';
    const page = await admin.get(from);
    expect(page.text).toContain(`action="/console/monitor/transfers/${id}/priority"`);
    expect(page.text).toMatch(/<input type="number" name="priority" min="0" max="99" step="1" value="99"/);
    const r = await admin.submit(from, `/console/monitor/transfers/${id}/priority`, { back: from, priority: '10' });
    expect([r.status, r.location]).toEqual([303, from]);
    expect(await row(id)).toMatchObject({ priority: 10, status: 'WAIT' });
    expect(await lastHistory(id)).toMatchObject({ status: 'WAIT', comment: 'Priority changed from 99 to 10 by admin' });
    expect((await auditOf(String(id)))[0]).toMatchObject({ actor: 'admin', detail: 'priority 10' });
    expect((await admin.get(from)).text).toMatch(/value="10"/);
  });

  it('in the console: refuses values out of 0..99 and not whole numbers, saying why, and changes nothing', async () => {
    await h.addDestination('PRIO_REFUSED');
    const { transferId: id } = await put('PRIO_REFUSED');
    const from = '/console/monitor/destinations/PRIO_REFUSED';
    for (const [value, message] of [
      ['100', 'Priority out of range (0..99): 100'],
      ['-1', 'Priority out of range (0..99): -1'],
      ['2.5', "Priority must be a whole number from 0 to 99: '2.5'"],
      ['', "Priority must be a whole number from 0 to 99: ''"],
    ]) {
      const r = await admin.submit(from, `/console/monitor/transfers/${id}/priority`, { back: from, priority: value! });
      expect(r.status).toBe(303);
      const shown = await admin.get(r.location!);
      expect(shown.text).toContain(`role="alert">${message!.replaceAll("'", '&#39;')}</p>`);
    }
    expect((await row(id)).priority).toBe(99);
    expect(await auditOf(String(id))).toEqual([]);
  });

  it('refuses a deleted transfer, an unknown one and an unchanged priority', async () => {
    await h.addDestination('PRIO_DELETED');
    const { transferId: id, dataFileId } = await put('PRIO_DELETED');
    await expect(changePriority(h.ports, 'op', id, '99')).rejects.toThrow(`Transfer ${id} already has priority 99`);
    const del = await h.call('DELETE', `/v1/datafile/del?id=${dataFileId}`, { auth: pipeline });
    expect(del.status, del.text).toBe(200);
    await expect(changePriority(h.ports, 'op', id, '5')).rejects.toThrow(
      `Transfer ${id} is deleted: its priority cannot be changed`,
    );
    await expect(changePriority(h.ports, 'op', 987654321, '5')).rejects.toThrow('Transfer 987654321 not found');
    expect((await row(id)).priority).toBe(99);
    expect(await auditOf(String(id))).toEqual([]);
  });

  it('sends the transfer given a lower number first', async () => {
    const { claimTransfers } = await import('../../core/dissemination/claims.ts');
    await h.addDestination('PRIO_ORDER');
    const first = await put('PRIO_ORDER');
    const second = await put('PRIO_ORDER');
    await changePriority(h.ports, 'op', second.transferId, '0');
    const request = { destination: 'PRIO_ORDER', hostId: 'H1', mover: 'm1', destinationMax: -1, hostMax: -1 };
    const [claimed] = await claimTransfers(h.ports, { ...request, leaseMs: 60_000, wanted: 1 });
    expect(claimed?.id).toBe(second.transferId);
    expect((await row(first.transferId)).status).toBe('WAIT');
  });
});
