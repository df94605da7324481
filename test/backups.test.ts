import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ecusers, hosts } from '../db/schema.ts';
import { createHarness, type Harness } from './support/harness.ts';
import { scaled } from './support/time.ts';

let h: Harness;
let admin: string; // `.*`: every service and showSensitiveInfo
let reader: string; // destinationBackupList only
let writer: string; // putDestinationBackup only
beforeAll(async () => {
  h = await createHarness();
  admin = await h.client('admin', ['.*']);
  reader = await h.client('reader', ['destinationBackupList']);
  writer = await h.client('writer', ['putDestinationBackup']);
});
afterAll(() => h.close());

// The key names of wire-decisions §7, written out independently of the implementation.
const DESTINATION_KEYS = (
  `name ecuserName countryIso type comment active monitor backup acquisition stopIfDirty forceProxy
  onHostFailure ifTargetExist keepInSpool maxConnections retryCount retryFrequency maxStart startFrequency ` +
  `maxRequeue maxPending
  maxFileSize resetFrequency maxInactivity transferRate userMail mailOnUpdate mailOnStart mailOnEnd ` +
  `mailOnError filterName
  dateFormat groupByDate update transferGroupName hostForSourceName data`
).split(/\s+/);
const HOST_KEYS =
  `hostid ecuserName transferMethodName type nickname host login passwd dir data comment active maxConnections
  retryCount retryFrequency check checkFrequency checkFilename mailOnSuccess mailOnError notifyOnce userMail networkName
  networkCode filterName transferGroupName automaticLocation acquisitionFrequency`.split(/\s+/);
const sorted = (o: object) => Object.keys(o).sort();

const error = (message: string) => JSON.stringify({ status: 'error', message });
const created = (n: number) => JSON.stringify({ status: 'ok', message: `Number of Destination(s) created: ${n}` });
const put = (body: unknown, opts: { copySharedHost?: boolean; auth?: string; on?: Harness } = {}) =>
  (opts.on ?? h).call(
    'PUT',
    `/v1/destination/backup${opts.copySharedHost === undefined ? '' : `?copySharedHost=${opts.copySharedHost}`}`,
    { auth: opts.auth ?? admin, body },
  );
const backupOf = async (name: string, auth = admin, on = h) => {
  const r = await on.call('GET', `/v1/destination/backup/${name}`, { auth });
  expect(r.status, r.text).toBe(200);
  return r.json.backup;
};
const hostsOf = async (name: string, auth = admin) =>
  (await backupOf(name, auth)).destinations[0].associations.map((a: any) => a.host);

const ECUSER = { name: 'owner', uid: 500, gid: 501, dir: '/home/owner', shell: '/bin/sh', comment: 'Owner' };
const METHOD = {
  name: 'sftp',
  ectransModuleName: 'sftp',
  value: 'v',
  restrict: true,
  resolve: false,
  comment: 'SSH',
  active: true,
  ectransModule: { name: 'sftp', classe: 'ecmwf.Sftp', archive: 'sftp.jar', active: true },
};
let hostids = 100;
const host = (nickname: string, over: Record<string, unknown> = {}) => ({
  hostid: ++hostids,
  nickname,
  host: `${nickname}.example.org`,
  login: 'u',
  passwd: 'pw',
  data: '',
  ...over,
});
const entry = (name: string, over: Record<string, unknown> = {}, hostList: Array<Record<string, unknown>> = []) => ({
  destination: { name, countryIso: 'gb', type: 1, ...over },
  associations: hostList.map((host, priority) => ({ priority, host })),
});
const backup = (destinations: unknown[], extra: Record<string, unknown> = {}) => ({
  backup: { destinations, ...extra },
});

/** A destination and host with every key of §7 set to something other than its default. */
const FULL = {
  destination: {
    name: 'FULL_DEST',
    ecuserName: 'owner',
    countryIso: 'fr',
    type: 2,
    comment: 'All keys',
    active: false,
    monitor: true,
    backup: true,
    acquisition: true,
    stopIfDirty: true,
    forceProxy: true,
    onHostFailure: 1,
    ifTargetExist: 2,
    keepInSpool: 3,
    maxConnections: 4,
    retryCount: 5,
    retryFrequency: 6,
    maxStart: 7,
    startFrequency: 8,
    maxRequeue: 9,
    maxPending: 10,
    maxFileSize: 5_000_000_000,
    resetFrequency: 12,
    maxInactivity: 13,
    transferRate: 14,
    userMail: 'full@example.org',
    mailOnUpdate: true,
    mailOnStart: true,
    mailOnEnd: true,
    mailOnError: true,
    filterName: 'gzip',
    dateFormat: 'yyyyMMdd',
    groupByDate: true,
    update: 15,
    transferGroupName: 'group',
    hostForSourceName: 'source-host',
    data: 'upload.x = "1"\n',
  },
  associations: [
    {
      priority: 3,
      host: {
        hostid: 77,
        ecuserName: 'owner',
        transferMethodName: 'sftp',
        type: 'Dissemination',
        nickname: 'full-host',
        host: 'full.example.org',
        login: 'fl',
        passwd: 's3cr3t "pw"',
        dir: '/in',
        data: 'sftp.port = "22"\nsftp.timeout = "5"',
        comment: 'c',
        active: false,
        maxConnections: 2,
        retryCount: 3,
        retryFrequency: 4,
        check: true,
        checkFrequency: 6_000_000_000,
        checkFilename: 'check.txt',
        mailOnSuccess: true,
        mailOnError: true,
        notifyOnce: true,
        userMail: 'h@example.org',
        networkName: 'Internet',
        networkCode: 'I',
        filterName: 'bzip2',
        transferGroupName: 'tg',
        automaticLocation: true,
        acquisitionFrequency: 60,
      },
    },
  ],
};

describe('GET /v1/destination/backup/{name}', () => {
  beforeAll(async () => {
    expect((await put({ backup: { destinations: [FULL], methods: [METHOD], ecusers: [ECUSER] } })).text).toBe(
      created(1),
    );
  });

  it('answers the structure of §7 with the reference key names', async () => {
    const r = await h.call('GET', '/v1/destination/backup/FULL_DEST', { auth: admin });
    expect(r.status).toBe(200);
    expect(sorted(r.json)).toEqual(['backup', 'status']);
    expect(r.json.status).toBe('ok');
    const b = r.json.backup;
    expect(sorted(b)).toEqual(['aliases', 'destinations', 'ecusers', 'methods']);
    expect(b.destinations).toHaveLength(1);
    expect(sorted(b.destinations[0])).toEqual(['associations', 'destination']);
    expect(sorted(b.destinations[0].destination)).toEqual([...DESTINATION_KEYS].sort());
    expect(sorted(b.destinations[0].associations[0])).toEqual(['host', 'priority']);
    expect(sorted(b.destinations[0].associations[0].host)).toEqual([...HOST_KEYS].sort());
    expect(b.methods).toEqual([METHOD]);
    expect(b.ecusers).toEqual([ECUSER]);
    expect(b.aliases).toEqual([]);
  });

  it('gives back every restored value (only the host id is new)', async () => {
    const b = await backupOf('FULL_DEST');
    expect(b.destinations[0].destination).toEqual(FULL.destination);
    const { hostid, ...restored } = b.destinations[0].associations[0].host;
    const { hostid: _, ...original } = FULL.associations[0]!.host;
    expect(typeof hostid).toBe('number');
    expect(restored).toEqual(original);
    expect(b.destinations[0].associations[0].priority).toBe(3);
  });

  it('leaves passwd out without showSensitiveInfo and never stores it in clear', async () => {
    const [hidden] = await hostsOf('FULL_DEST', reader);
    expect('passwd' in hidden).toBe(false);
    expect(sorted(hidden)).toEqual(HOST_KEYS.filter((k) => k !== 'passwd').sort());
    const sensitive = await h.client('sensitive', ['destinationBackupList|showSensitiveInfo']);
    expect((await hostsOf('FULL_DEST', sensitive))[0].passwd).toBe('s3cr3t "pw"');
    const [row] = await h.db.select().from(hosts).where(eq(hosts.hostid, hidden.hostid));
    expect(row!.passwdSealed).not.toContain('s3cr3t');
  });

  it('a host restored without passwd gets none', async () => {
    const { passwd: _, ...noPasswd } = host('nopw-host');
    expect((await put(backup([entry('NOPW_DEST', {}, [noPasswd])]))).text).toBe(created(1));
    const [shown] = await hostsOf('NOPW_DEST');
    expect(shown.passwd).toBeNull();
    const [row] = await h.db.select().from(hosts).where(eq(hosts.hostid, shown.hostid));
    expect(row!.passwdSealed).toBeNull();
  });

  it('answers Destination <name> not found for an unknown name', async () => {
    const r = await h.call('GET', '/v1/destination/backup/NO_SUCH', { auth: admin });
    expect([r.status, r.text]).toEqual([500, error('Destination NO_SUCH not found')]);
  });
});

describe('GET /v1/destination/backup (filters)', () => {
  beforeAll(async () => {
    const body = backup([entry('F_GB1'), entry('F_GB2', { type: 2 }), entry('F_FR1', { countryIso: 'FR' })]);
    expect((await put(body)).text).toBe(created(3));
    await h.call('POST', '/v1/incoming/user/add2?id=fuser&email=f@example.org&iso=gb&active=true', { auth: admin });
    expect(
      (await h.call('POST', '/v1/incoming/association/add?id=fuser&destination=F_FR1', { auth: admin })).status,
    ).toBe(200);
  });
  const names = async (path: string) => {
    const r = await h.call('GET', path, { auth: admin });
    expect(r.status, r.text).toBe(200);
    return (r.json.backup?.destinations.map((d: any) => d.destination.name) ??
      r.json.destinationList.map((d: any) => d.name)) as string[];
  };

  it.each(['', '?iso=gb', '?iso=FR', '?type=2', '?iso=gb&type=1', '?id=fuser', '?id=fuser&iso=gb'])(
    'selects like the destination list: %s',
    async (query) => {
      const selected = await names(`/v1/destination/backup${query}`);
      expect(selected).toEqual(await names(`/v1/destination/list${query}`));
      const ours = selected.filter((n) => n.startsWith('F_'));
      const expected: Record<string, string[]> = {
        '': ['F_FR1', 'F_GB1', 'F_GB2'],
        '?iso=gb': ['F_GB1', 'F_GB2'],
        '?iso=FR': ['F_FR1'],
        '?type=2': ['F_GB2'],
        '?iso=gb&type=1': ['F_GB1'],
        '?id=fuser': ['F_FR1'],
        '?id=fuser&iso=gb': [],
      };
      expect(ours).toEqual(expected[query]);
    },
  );

  it('refuses filters that name nothing, and malformed ones', async () => {
    const get = (q: string) => h.call('GET', `/v1/destination/backup${q}`, { auth: admin });
    expect((await get('?iso=zz')).text).toBe(error('Country zz not found'));
    expect((await get('?type=9')).text).toBe(error('Type 9 not found'));
    expect((await get('?id=ghost')).text).toBe(error('User ghost not found'));
    const bad = await get('?type=abc');
    expect([bad.status, bad.text]).toEqual([400, "Invalid value for parameter type: 'abc' (integer expected)"]);
    expect((await get('?iso=gbr')).status).toBe(400);
  });
});

describe('PUT /v1/destination/backup', () => {
  it('skips destinations that exist; the count leaves them out', async () => {
    expect((await put(backup([entry('SKIP_A', { comment: 'first' })]))).text).toBe(created(1));
    const again = backup([entry('SKIP_A', { comment: 'second' }, [host('skip-host')]), entry('SKIP_B')]);
    expect((await put(again)).text).toBe(created(1));
    const a = (await backupOf('SKIP_A')).destinations[0];
    expect(a.destination.comment).toBe('first');
    expect(a.associations).toEqual([]);
    expect((await put(again)).text).toBe(created(0));
    expect((await put({ backup: {} })).text).toBe(created(0));
  });

  it('takes the body of a GET as it is (status or success at the top level ignored)', async () => {
    const answer = (await h.call('GET', '/v1/destination/backup/FULL_DEST', { auth: admin })).json;
    expect(answer.status).toBe('ok');
    expect((await put(answer)).text).toBe(created(0));
    expect((await put({ success: 'yes', backup: answer.backup })).text).toBe(created(0));
    const renamed = structuredClone(answer);
    renamed.backup.destinations[0].destination.name = 'FULL_COPY';
    expect((await put(renamed)).text).toBe(created(1));
    const copy = (await backupOf('FULL_COPY')).destinations[0];
    expect(copy.destination).toEqual({ ...FULL.destination, name: 'FULL_COPY' });
  });

  it.each([
    ['another top-level key', { backup: {}, extra: 1 }, /extra/],
    ['no backup key', { destinations: [] }, /backup|destinations/],
    ['an array', [], /./],
    ['backup null', { backup: null }, /backup/],
    ['a bad boolean', backup([entry('T1', { active: 'yes' })]), /backup\.destinations\.0\.destination\.active/],
    ['a string type', backup([entry('T2', { type: '1' })]), /destination\.type/],
    ['a bad country code', backup([entry('T3', { countryIso: 'gbr' })]), /countryIso/],
    ['no name', backup([entry('', {})]), /destination\.name/],
    [
      'a bad priority',
      {
        backup: {
          destinations: [
            { destination: { name: 'T4', countryIso: 'gb', type: 1 }, associations: [{ priority: 'high', host: {} }] },
          ],
        },
      },
      /priority/,
    ],
    ['a bad host key', backup([entry('T5', {}, [{ nickname: 'x', active: 'on' }])]), /host\.active/],
    ['aliases not an array', backup([], { aliases: {} }), /aliases/],
    ['an ecuser without name', backup([], { ecusers: [{ uid: 1 }] }), /ecusers\.0\.name/],
  ])('400 for %s', async (_, body, mentions) => {
    const r = await put(body);
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(r.text).toMatch(/^Invalid request body: /);
    expect(r.text).toMatch(mentions);
    expect(r.text).not.toContain('\n');
  });

  it('400 for invalid JSON', async () => {
    const r = await put('{"backup":');
    expect(r.status).toBe(400);
    expect(r.text).toMatch(/^Invalid JSON body: /);
  });

  it.each([
    ['an unknown country', entry('TX_BAD', { countryIso: 'XX' }), 'Country xx not found'],
    ['an unknown type', entry('TX_BAD', { type: 9 }), 'Type 9 not found'],
    [
      'an unknown transfer method',
      entry('TX_BAD', {}, [host('tx-bad', { transferMethodName: 'nosuch' })]),
      'Transfer method nosuch not found',
    ],
  ])('refuses %s and applies nothing (one transaction)', async (_, bad, message) => {
    const body = backup(
      [entry('TX_VALID', { ecuserName: 'tx-owner' }, [host('tx-host', { ecuserName: 'tx-owner' })]), bad],
      {
        ecusers: [{ name: 'tx-ecuser' }],
      },
    );
    const r = await put(body);
    expect([r.status, r.text]).toEqual([500, error(message)]);
    const g = await h.call('GET', '/v1/destination/backup/TX_VALID', { auth: admin });
    expect(g.text).toBe(error('Destination TX_VALID not found'));
    expect(await h.db.select().from(hosts).where(eq(hosts.nickname, 'tx-host'))).toEqual([]);
    expect(await h.db.select().from(ecusers).where(eq(ecusers.name, 'tx-ecuser'))).toEqual([]);
    expect(await h.db.select().from(ecusers).where(eq(ecusers.name, 'tx-owner'))).toEqual([]);
  });

  it('skips (and logs) an alias whose target does not exist; restores the destination itself', async () => {
    const r = await put(backup([entry('AL_A')], { aliases: [{ aliasFrom: 'AL_A', aliasTo: 'AL_NOWHERE' }] }));
    expect(r.text).toBe(created(1));
    expect((await backupOf('AL_A')).aliases).toEqual([]);
    expect(h.logLines.some((l) => l.includes('alias skipped') && l.includes('AL_NOWHERE'))).toBe(true);
    const ok = await put(backup([entry('AL_B'), entry('AL_C')], { aliases: [{ aliasFrom: 'AL_B', aliasTo: 'AL_C' }] }));
    expect(ok.text).toBe(created(2));
    expect((await backupOf('AL_B')).aliases).toEqual([{ aliasFrom: 'AL_B', aliasTo: 'AL_C' }]);
  });

  it('adds no alias to a destination the restore skipped because it existed', async () => {
    expect((await put(backup([entry('AL_D'), entry('AL_E')]))).text).toBe(created(2));
    const again = await put(
      backup([entry('AL_D'), entry('AL_E')], { aliases: [{ aliasFrom: 'AL_D', aliasTo: 'AL_E' }] }),
    );
    expect(again.text).toBe(created(0));
    expect((await backupOf('AL_D')).aliases).toEqual([]);
  });
});

describe('shared hosts', () => {
  const hostIdOf = async (name: string) => (await hostsOf(name))[0].hostid as number;

  it('reuses a host whose nickname is associated with a local destination; copySharedHost=true copies it', async () => {
    expect((await put(backup([entry('SH_A', {}, [host('shared-1', { data: 'a.k = "original"' })])]))).text).toBe(
      created(1),
    );
    const original = await hostIdOf('SH_A');
    expect(
      (await put(backup([entry('SH_B', {}, [host('shared-1', { hostid: 999, data: 'a.k = "other"' })])]))).text,
    ).toBe(created(1));
    expect(await hostIdOf('SH_B')).toBe(original);
    expect((await hostsOf('SH_B'))[0].data).toBe('a.k = "original"');
    expect(
      (await put(backup([entry('SH_C', {}, [host('shared-1', { data: 'a.k = "copy"' })])]), { copySharedHost: true }))
        .text,
    ).toBe(created(1));
    const copy = await hostIdOf('SH_C');
    expect(copy).not.toBe(original);
    expect((await hostsOf('SH_C'))[0].data).toBe('a.k = "copy"');
    expect((await hostsOf('SH_A'))[0].data).toBe('a.k = "original"');
    expect((await put(backup([entry('SH_D', {}, [host('shared-1')])]), { copySharedHost: false })).text).toBe(
      created(1),
    );
    expect([original, copy]).toContain(await hostIdOf('SH_D'));
  });

  it('does not reuse a host that no destination uses', async () => {
    const [orphan] = await h.db.insert(hosts).values({ nickname: 'orphan-host' }).returning({ hostid: hosts.hostid });
    expect((await put(backup([entry('SH_ORPHAN', {}, [host('orphan-host')])]))).text).toBe(created(1));
    expect(await hostIdOf('SH_ORPHAN')).not.toBe(orphan!.hostid);
  });

  it('a host shared by destinations of one backup stays shared among the copies', async () => {
    const pair = host('pair-host', { hostid: 4242 });
    const body = backup([entry('SH_P1', {}, [pair]), entry('SH_P2', {}, [pair])]);
    expect((await put(body, { copySharedHost: true })).text).toBe(created(2));
    expect(await hostIdOf('SH_P1')).toBe(await hostIdOf('SH_P2'));
  });

  it('takes identical copies of one host under one hostid as that one host, whatever their key order', async () => {
    const one = host('same-host', { hostid: 4343, comment: 'c' });
    const reordered = Object.fromEntries(Object.entries(one).reverse());
    const body = backup([entry('SH_S1', {}, [one]), entry('SH_S2', {}, [reordered])]);
    expect((await put(body, { copySharedHost: true })).text).toBe(created(2));
    expect(await hostIdOf('SH_S1')).toBe(await hostIdOf('SH_S2'));
  });

  it.each([
    [
      'in two destinations',
      (a: Record<string, unknown>, b: Record<string, unknown>) => [entry('AMB_1', {}, [a]), entry('AMB_2', {}, [b])],
    ],
    ['in one destination', (a: Record<string, unknown>, b: Record<string, unknown>) => [entry('AMB_1', {}, [a, b])]],
  ])('refuses one hostid given to two different hosts %s, with 400 naming it, writing nothing', async (_, place) => {
    const a = host('amb-a', { hostid: 4444 });
    const b = host('amb-b', { hostid: '4444' });
    const r = await put(backup(place(a, b), { ecusers: [{ name: 'amb-ecuser' }] }), { copySharedHost: true });
    expect([r.status, r.text]).toEqual([400, 'Invalid request body: hostid 4444 is given to different host records']);
    for (const name of ['AMB_1', 'AMB_2']) {
      const g = await h.call('GET', `/v1/destination/backup/${name}`, { auth: admin });
      expect(g.text).toBe(error(`Destination ${name} not found`));
    }
    expect(await h.db.select().from(hosts).where(eq(hosts.nickname, 'amb-a'))).toEqual([]);
    expect(await h.db.select().from(hosts).where(eq(hosts.nickname, 'amb-b'))).toEqual([]);
    expect(await h.db.select().from(ecusers).where(eq(ecusers.name, 'amb-ecuser'))).toEqual([]);
  });
});

describe('round trip into a fresh service', () => {
  it(
    'recreates destinations, hosts, options, aliases, methods and ecusers',
    async () => {
      const source = await createHarness();
      const target = await createHarness();
      try {
        const sourceAdmin = await source.client('admin', ['.*']);
        const targetAdmin = await target.client('admin', ['.*']);
        const FTP = {
          name: 'ftp',
          ectransModuleName: 'ftp',
          value: null,
          restrict: false,
          resolve: true,
          comment: null,
          active: false,
          ectransModule: { name: 'ftp', classe: null, archive: null, active: true },
        };
        const shared = host('rt-shared', {
          passwd: null,
          transferMethodName: 'ftp',
          data: 'ftp.port = "21"\n###### END-OF-PROPERTIES ######\nscript',
        });
        const body = backup(
          [
            FULL,
            entry('RT_1', { ecuserName: 'rt-owner', data: 'd.x = "1"' }, [shared]),
            entry('RT_2', { countryIso: 'de', type: 0 }, [host('rt-own', { ecuserName: 'rt-owner' }), shared]),
          ],
          {
            methods: [METHOD, FTP],
            ecusers: [ECUSER, { name: 'rt-owner', uid: null, gid: 7, dir: null, shell: null, comment: 'x' }],
            aliases: [
              { aliasFrom: 'RT_1', aliasTo: 'RT_2' },
              { aliasFrom: 'RT_2', aliasTo: 'FULL_DEST' },
            ],
          },
        );
        expect((await put(body, { on: source, auth: sourceAdmin })).text).toBe(created(3));

        const exported = (await source.call('GET', '/v1/destination/backup', { auth: sourceAdmin })).json;
        expect(exported.backup.destinations.map((d: any) => d.destination.name)).toEqual(['FULL_DEST', 'RT_1', 'RT_2']);
        expect(exported.backup.aliases).toHaveLength(2);
        expect(exported.backup.methods.map((m: any) => m.name)).toEqual(['ftp', 'sftp']);
        expect(exported.backup.ecusers.map((e: any) => e.name)).toEqual(['owner', 'rt-owner']);
        const r = await put(exported, { on: target, auth: targetAdmin });
        expect(r.text).toBe(created(3));
        const restored = (await target.call('GET', '/v1/destination/backup', { auth: targetAdmin })).json;

        const strip = (b: any) => ({
          ...b,
          destinations: b.destinations.map((d: any) => ({
            ...d,
            associations: d.associations.map((a: any) => ({ ...a, host: { ...a.host, hostid: undefined } })),
          })),
        });
        expect(strip(restored.backup)).toEqual(strip(exported.backup));
        const idsOf = (b: any, name: string) =>
          b.destinations.find((d: any) => d.destination.name === name).associations.map((a: any) => a.host.hostid);
        // RT_1 and RT_2 still share one host; RT_2's own host is another one.
        expect(idsOf(restored.backup, 'RT_2')).toContain(idsOf(restored.backup, 'RT_1')[0]);
        expect(new Set(idsOf(restored.backup, 'RT_2')).size).toBe(2);
        expect(restored.backup.destinations[0].associations[0].host.passwd).toBe('s3cr3t "pw"');
      } finally {
        await source.close();
        await target.close();
      }
    },
    scaled(300_000),
  );
});

describe('permissions', () => {
  it('destinationBackupList for the GETs, putDestinationBackup for the PUT', async () => {
    const denied = error('User not authorized');
    expect((await h.call('GET', '/v1/destination/backup', { auth: writer })).text).toBe(denied);
    expect((await h.call('GET', '/v1/destination/backup/FULL_DEST', { auth: writer })).text).toBe(denied);
    expect((await put(backup([entry('PERM_X')]), { auth: reader })).text).toBe(denied);
    expect((await h.call('GET', '/v1/destination/backup/PERM_X', { auth: admin })).text).toBe(
      error('Destination PERM_X not found'),
    );
    expect((await h.call('GET', '/v1/destination/backup', { auth: reader })).status).toBe(200);
    expect((await put(backup([entry('PERM_X', {}, [host('perm-host')])]), { auth: writer })).text).toBe(created(1));
    // A writer without showSensitiveInfo still restores the password it sends.
    expect((await hostsOf('PERM_X'))[0].passwd).toBe('pw');
  });
});
