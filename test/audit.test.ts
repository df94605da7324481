import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as apiClients from '../core/api-clients/clients.ts';
import { auditTrail } from '../core/console/audit.ts';
import { setActive, setCategory } from '../core/console/sign-in.ts';
import { importFields } from '../core/metadata/fields.ts';
import { createHarness, type Harness } from './support/harness.ts';

/**
 * Every change an operator makes outside the API (console or command line) writes its audit row
 * in the change's own transaction: both are stored, or neither.
 */
let h: Harness;
beforeAll(async () => {
  h = await createHarness();
  await h.ports.repos.webUsers.insert(
    { id: 'ops1', name: null, active: true, passwordSealed: await h.ports.secrets.encrypt('x'), passwordHash: 'x' },
    new Date(),
  );
});
afterAll(() => h.close());

const trail = async () =>
  (await auditTrail(h.ports)).map((e) => [e.actor, e.action, e.targetKind, e.target, e.detail]).reverse();

describe('audit rows', () => {
  it('are written for client, role and field changes made from the command line', async () => {
    const before = (await auditTrail(h.ports)).length;
    await apiClients.create(h.ports, 'cli', { username: 'audited', permissions: ['webUserList'], origin: 'cli' });
    await apiClients.setPermissions(h.ports, 'cli', 'audited', ['destinationList']);
    const { secret } = await apiClients.resetSecret(h.ports, 'cli', 'audited');
    await apiClients.remove(h.ports, 'cli', 'audited');
    await setCategory(h.ports, 'cli', 'ops1', 'administrator', true);
    await setCategory(h.ports, 'cli', 'ops1', 'administrator', false);
    await setActive(h.ports, 'cli', 'ops1', false);
    await importFields(h.ports, 'cli', [{ name: 'audited_field', label: 'Audited', type: 'text', category: 'C' }]);
    await importFields(h.ports, 'cli', [
      { name: 'audited_field', label: 'Audited again', type: 'text', category: 'C' },
    ]);
    const rows = (await trail()).slice(-9);
    expect(rows).toEqual([
      ['cli', 'create', 'API client', 'audited', 'webUserList'],
      ['cli', 'set permissions', 'API client', 'audited', 'destinationList'],
      ['cli', 'reset secret', 'API client', 'audited', null],
      ['cli', 'delete', 'API client', 'audited', null],
      ['cli', 'grant category', 'web user', 'ops1', 'administrator'],
      ['cli', 'revoke category', 'web user', 'ops1', 'administrator'],
      ['cli', 'deactivate', 'web user', 'ops1', null],
      ['cli', 'create', 'metadata field', 'audited_field', null],
      ['cli', 'update', 'metadata field', 'audited_field', null],
    ]);
    expect((await auditTrail(h.ports)).length).toBe(before + 9);
    expect(JSON.stringify(await auditTrail(h.ports))).not.toContain(secret);
  });

  it('are not written for a change that fails', async () => {
    const before = (await auditTrail(h.ports)).length;
    await apiClients.create(h.ports, 'cli', { username: 'twice', permissions: [], origin: 'cli' });
    await expect(
      apiClients.create(h.ports, 'cli', { username: 'twice', permissions: [], origin: 'cli' }),
    ).rejects.toThrow('already exists');
    await expect(apiClients.remove(h.ports, 'cli', 'nobody')).rejects.toThrow('not found');
    await expect(setCategory(h.ports, 'cli', 'ops1', 'administrator', false)).rejects.toThrow('does not hold');
    expect((await auditTrail(h.ports)).length).toBe(before + 1);
  });

  it('roll the change back when they cannot be written', async () => {
    // No database text can hold NUL: the audit row fails after the change itself succeeded.
    const unstorableActor = 'bad\u0000actor';
    await expect(
      apiClients.create(h.ports, unstorableActor, { username: 'rolled', permissions: [], origin: 'cli' }),
    ).rejects.toThrow();
    expect(await h.ports.repos.clients.find('rolled')).toBeNull();
    await apiClients.create(h.ports, 'cli', { username: 'kept', permissions: ['webUserList'], origin: 'cli' });
    await expect(apiClients.setPermissions(h.ports, unstorableActor, 'kept', ['.*'])).rejects.toThrow();
    expect((await h.ports.repos.clients.find('kept'))?.permissions).toEqual(['webUserList']);
    await expect(
      importFields(h.ports, unstorableActor, [{ name: 'never_field', label: 'Never', type: 'text', category: 'C' }]),
    ).rejects.toThrow();
    expect((await h.ports.repos.metadata.fields()).map((f) => f.name)).not.toContain('never_field');
  });
});
