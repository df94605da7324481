import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataTransfers } from '../../db/schema.ts';
import { eventually } from '../support/engine.ts';
import { basic } from '../support/harness.ts';
import { bytesOf, incomingUser, type PortalScene, portalScene } from './support.ts';

/**
 * An HTTPS upload whose uploader loses access while its bytes are still coming: nothing is
 * registered and its bytes are discarded, whether it lost the destination or its password changed.
 */
let s: PortalScene;

beforeAll(async () => {
  s = await portalScene();
  const { h, admin } = s;
  await h.addDestination('DEST');
  await h.addDestination('OTHER');
  await incomingUser(h, admin, { id: 'halfway', password: 'Halfway-1', grant: ['put'] }, ['DEST', 'OTHER']);
  await incomingUser(h, admin, { id: 'renamed', password: 'Renamed-1', grant: ['put'] }, ['DEST']);
}, 60_000);
afterAll(() => s?.close());

const registered = (target: string) =>
  s.h.db
    .select({ id: dataTransfers.id })
    .from(dataTransfers)
    .where(and(eq(dataTransfers.destination, 'DEST'), eq(dataTransfers.target, target)));
const partial = () => path.join(s.uploads, '.partial');
const partialBytes = () =>
  fs.existsSync(partial())
    ? fs.readdirSync(partial()).reduce((sum, p) => sum + fs.statSync(path.join(partial(), p)).size, 0)
    : 0;

/** A PUT of `target` sending half its bytes, then (after `meanwhile`) the rest: its answer. */
async function putAcross(user: string, password: string, target: string, meanwhile: () => Promise<void>) {
  const first = bytesOf(200_000, 61);
  const rest = bytesOf(200_000, 62);
  const request = https.request(`${s.url}/portal/data/DEST/${target}`, {
    method: 'PUT',
    rejectUnauthorized: false,
    headers: { authorization: basic(user, password), 'content-length': String(first.length + rest.length) },
  });
  const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
    request.on('response', (res) => {
      let body = '';
      res.on('data', (c) => void (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    request.on('error', reject);
  });
  request.write(first);
  await eventually(async () => (partialBytes() >= first.length ? true : undefined));
  await meanwhile();
  request.end(rest);
  return answered;
}

describe('an HTTPS upload under way', () => {
  it('is not registered once its destination is no longer the user’s', async () => {
    const answer = await putAcross('halfway', 'Halfway-1', 'cut.bin', async () => {
      const r = await s.h.call('DELETE', '/v1/incoming/association/del?id=halfway&destination=DEST', {
        auth: s.admin,
      });
      expect(r.status, r.text).toBe(200);
    });
    expect(answer.status, answer.body).toBe(401);
    expect(await registered('cut.bin')).toEqual([]);
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'cut.bin'))).toBe(false);
    expect(partialBytes()).toBe(0);
  });

  it('is not registered once the password it was sent with changed', async () => {
    const answer = await putAcross('renamed', 'Renamed-1', 'changed.bin', async () => {
      const query = new URLSearchParams({ id: 'renamed', email: 'r@example.org', iso: 'gb', pass: 'Renamed-2' });
      const r = await s.h.call('POST', `/v1/incoming/user/add?${query}`, { auth: s.admin });
      expect(r.status, r.text).toBe(200);
    });
    expect(answer.status, answer.body).toBe(401);
    expect(await registered('changed.bin')).toEqual([]);
    expect(fs.existsSync(path.join(s.uploads, 'DEST', 'changed.bin'))).toBe(false);
    expect(partialBytes()).toBe(0);
  });
});
