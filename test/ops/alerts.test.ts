import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freshPostgres, onPostgres } from '../support/database.ts';
import { eventually } from '../support/engine.ts';
import {
  basic,
  freePort,
  killAll,
  ROOT,
  removeTempDirs,
  request,
  runCli,
  type ServerProcess,
  startServer,
  tempDir,
} from '../support/processes.ts';
import { needs } from '../support/tools.ts';

/**
 * docs/ops/prometheus-alerts.yml and docs/ops/grafana-dashboard.json against what a real `ecpds-edge serve`
 * shows while one destination fails (its host's directory is a plain file) and another is on HOLD: the
 * scraped samples become a promtool test's input series, and the alerts that fire are spelled out.
 */

const RULES = path.join(ROOT, 'docs/ops/prometheus-alerts.yml');
const DASHBOARD = path.join(ROOT, 'docs/ops/grafana-dashboard.json');
/** Series the other parts of /metrics add (mail outbox, host checks): the rules and the dashboard may name them. */
const NAMED_ELSEWHERE = [
  'ecpds_mail_outbox_pending',
  'ecpds_mail_outbox_oldest_seconds',
  'ecpds_host_check_up',
  'ecpds_host_check_timestamp_seconds',
  'ecpds_host_check_duration_seconds',
  'up',
];
/** Gauges that are ages: while the failure lasts they grow with the clock, and the input series do too. */
const AGES = new Set([
  'ecpds_destination_oldest_waiting_seconds',
  'ecpds_wis2_outbox_oldest_seconds',
  'ecpds_mail_outbox_oldest_seconds',
]);
const CLIENT = { username: 'ops', password: 'Ops-pass-123' };
const auth = basic(CLIENT.username, CLIENT.password);

vi.setConfig({ testTimeout: 180_000, hookTimeout: 180_000 });

function promtool(args: string[]) {
  const r = spawnSync('promtool', args, { encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

function send(url: string, method: string, p: string, body: string) {
  return new Promise<{ status: number; json: any }>((resolve, reject) => {
    const r = https.request(
      new URL(p, url),
      {
        method,
        rejectUnauthorized: false,
        agent: false,
        headers: { authorization: auth, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => void (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      },
    );
    r.on('error', reject);
    r.end(body);
  });
}

type Sample = { name: string; labels: Record<string, string>; value: number };

/** The samples of a Prometheus text answer (this server writes no timestamps and no spaces in labels). */
function samples(text: string): Sample[] {
  return text.split('\n').flatMap((line) => {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) return [];
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    return [{ name: m[1]!, labels, value: Number(m[3]) }];
  });
}

const seriesOf = (s: Sample) =>
  `${s.name}{${Object.entries(s.labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}}`;

/** Each alert's summary and description, read from the rules file (its own layout: two annotations per rule). */
function annotationsOf(rules: string) {
  const found = new Map<string, { summary: string; description: string }>();
  for (const block of rules.split(/\n\s*- alert: /).slice(1)) {
    const name = block.split('\n')[0]!.trim();
    const summary = /\n\s*summary: "(.*)"/.exec(block)![1]!;
    const description = /\n\s*description: "(.*)"/.exec(block)![1]!;
    found.set(name, { summary, description });
  }
  return found;
}
const filled = (template: string, labels: Record<string, string>) =>
  template.replace(/\{\{ \$labels\.([a-z_]+) \}\}/g, (_, k: string) => labels[k] ?? '');

const TARGET = { job: 'ecpds', instance: 'edge:8443' };
const notes = annotationsOf(fs.readFileSync(RULES, 'utf8'));
type ExpectedAlert = ReturnType<typeof alert>;

/** An alert as promtool is told to expect it: the series' labels, the scrape target's, and the filled annotations. */
function alert(name: string, labels: Record<string, string>, severity: string) {
  const exp_labels = { ...labels, ...TARGET, severity };
  const a = notes.get(name)!;
  return {
    exp_labels,
    exp_annotations: { summary: filled(a.summary, exp_labels), description: filled(a.description, exp_labels) },
  };
}

/**
 * `promtool test rules` over one scrape held for 70 minutes, one sample a minute (ages grow with the clock, the
 * rest stays as scraped; an age of 0 is "none waiting", and stays so): the alerts named fire as expected at 70m.
 */
function promtoolTest(scraped: string, expected: Record<string, ExpectedAlert[]>, evalTime = '70m') {
  const input = samples(scraped).map((s) => ({
    series: seriesOf({ ...s, labels: { ...s.labels, ...TARGET } }),
    values: AGES.has(s.name) && s.value > 0 ? `${s.value}+60x70` : `${s.value}+0x70`,
  }));
  input.push({ series: seriesOf({ name: 'up', labels: TARGET, value: 1 }), values: '1+0x70' });
  const dir = tempDir('ecpds-promtool-');
  fs.copyFileSync(RULES, path.join(dir, 'alerts.yml'));
  // JSON is YAML: the test file is written as JSON.
  const testFile = {
    rule_files: ['alerts.yml'],
    evaluation_interval: '1m',
    tests: [
      {
        interval: '1m',
        input_series: input,
        alert_rule_test: Object.entries(expected).map(([alertname, exp_alerts]) => ({
          eval_time: evalTime,
          alertname,
          exp_alerts,
        })),
      },
    ],
  };
  fs.writeFileSync(path.join(dir, 'alerts.test.yml'), JSON.stringify(testFile, null, 1));
  return promtool(['test', 'rules', path.join(dir, 'alerts.test.yml')]);
}

/** A TCP forwarder on 127.0.0.1 to `port`, whose `cut` closes it and every connection through it. */
interface TcpForwarder {
  port: number;
  cut(): void;
}
async function tcpForwarder(port: number): Promise<TcpForwarder> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        socket.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}

const hostJson = (hostid: number, name: string, dir: string, over: Record<string, unknown> = {}) => ({
  hostid,
  nickname: `${name.toLowerCase()}-local`,
  host: 'localhost',
  login: '',
  dir,
  transferMethodName: 'file',
  type: 'Dissemination',
  active: true,
  maxConnections: 1,
  retryCount: 0,
  retryFrequency: 1000,
  networkName: 'LAN',
  networkCode: 'L',
  data: '',
  ...over,
});

describe('alert rules and dashboard against a server whose destinations fail and are held', needs('promtool'), () => {
  let server: ServerProcess;
  let url: string;
  let dataDir: string;
  let env: Record<string, string>;
  let closeDatabase: () => Promise<void> = async () => undefined;
  let scraped = '';
  let link: TcpForwarder | null = null;
  /** The commands run synchronously, the forwarder's event loop blocked meanwhile: they go straight to it. */
  let directDatabase: string | null = null;

  beforeAll(async () => {
    const dir = tempDir();
    dataDir = path.join(dir, 'data');
    const props = path.join(dir, 'ecpds.properties');
    fs.writeFileSync(props, `[API]\n${CLIENT.username}=${CLIENT.password}:.*\n`);
    env = {
      ECPDS_DATA_DIR: dataDir,
      ECPDS_PROPERTIES: props,
      ECPDS_METRICS_PUBLIC: '1',
      ECPDS_MOVER_POLL_MS: '200',
      ECPDS_MOVER_HEARTBEAT_SECONDS: '1',
      ECPDS_HOST_CHECK_POLL_MS: '200',
      // The first server is killed, maybe in the middle of a check: its lease (twice this and 10 s) must
      // lapse within the wait below for the second server to check the host again.
      ECPDS_HOST_CHECK_TIMEOUT_MS: '2000',
    };
    if (onPostgres()) {
      const database = await freshPostgres(process.env.TEST_DATABASE_URL!);
      closeDatabase = () => database.close();
      // Through a forwarder of the test's, which cuts the server off its database below.
      directDatabase = database.url;
      const at = new URL(database.url);
      link = await tcpForwarder(Number(at.port || 5432));
      at.port = String(link.port);
      env.DATABASE_URL = at.toString();
      env.ECPDS_SECRET_KEY = randomBytes(32).toString('base64');
    }
    // The first server's mover dies with it (killed below): its heartbeat is missed from then on.
    server = startServer({ ...env, ECPDS_MOVER_NAME: 'ops-lost', PORT: String(await freePort()) });
    url = await server.ready;
  });

  afterAll(async () => {
    await killAll();
    link?.cut();
    await closeDatabase();
    removeTempDirs();
  });

  it('shows a failing destination, a held one, a failing host check, a lost mover and mails waiting', async () => {
    const delivered = path.join(dataDir, 'delivered');
    fs.mkdirSync(delivered, { recursive: true });
    // The failing destination's directory is a plain file: every attempt fails writing into it.
    fs.writeFileSync(path.join(delivered, 'OPS_FAILING'), 'not a directory');
    const backup = {
      backup: {
        methods: [
          {
            name: 'file',
            ectransModuleName: 'file',
            active: true,
            ectransModule: { name: 'file', active: true },
          },
        ],
        destinations: ['OPS_FAILING', 'OPS_HELD'].map((name, i) => ({
          destination: {
            name,
            countryIso: 'gb',
            type: 1,
            maxConnections: 1,
            retryCount: 0,
            retryFrequency: 1000,
            // No SMTP server is configured: the failures' mails wait in the outbox.
            ...(i === 0 ? { userMail: 'ops@example.org', mailOnError: true } : {}),
            // Work may wait two minutes on the held one; an hour (unset) on the failing one.
            ...(i === 1 ? { maxInactivity: 120_000 } : {}),
          },
          associations: [
            {
              priority: 0,
              host: hostJson(900 + i, name, path.join(delivered, name), {
                // Checked: the check writes its file into the plain file the directory is, and fails.
                ...(i === 0 ? { check: true, checkFrequency: 1000, checkFilename: 'ecpds.tst' } : {}),
              }),
            },
          ],
        })),
      },
    };
    const restored = await send(url, 'PUT', '/v1/destination/backup', JSON.stringify(backup));
    expect(restored.json).toMatchObject({ status: 'ok' });
    // `destination start|hold` are commands on the database: the embedded one's, with its server stopped.
    // It dies rather than stops: its mover never says it stopped.
    await eventually(async () => {
      const r = await request(url, 'GET', '/metrics');
      return r.text.includes('ecpds_mover_heartbeat_age_seconds{mover="ops-lost"}') ? true : undefined;
    });
    server.child.kill('SIGKILL');
    await server.exited;
    for (const args of [
      ['destination', 'start', 'OPS_FAILING'],
      ['destination', 'start', 'OPS_HELD'],
      ['destination', 'hold', 'OPS_HELD'],
    ]) {
      const r = runCli(args, directDatabase ? { ...env, DATABASE_URL: directDatabase } : env);
      expect(r.status, r.stderr).toBe(0);
    }
    server = startServer({ ...env, ECPDS_MOVER_NAME: 'ops-alive', PORT: String(await freePort()) });
    url = await server.ready;
    const outgoing = path.join(dataDir, 'outgoing');
    fs.mkdirSync(outgoing, { recursive: true });
    fs.writeFileSync(path.join(outgoing, 'fc.grib'), 'GRIB data');
    for (const destination of ['OPS_FAILING', 'OPS_HELD']) {
      const q = new URLSearchParams({ destination, source: path.join(outgoing, 'fc.grib') });
      const put = await request(url, 'GET', `/v1/datafile/put?${q}`, { authorization: auth });
      expect(put.json, put.text).toMatchObject({ status: 'ok' });
    }
    let missing: string[] = [];
    scraped = await eventually(
      async () => {
        const r = await request(url, 'GET', '/metrics');
        const all = samples(r.text);
        const of = (name: string, destination: string) =>
          all.find((s) => s.name === name && s.labels.destination === destination)?.value;
        const lost = all.find((s) => s.name === 'ecpds_mover_heartbeat_age_seconds' && s.labels.mover === 'ops-lost');
        const conditions: [string, boolean][] = [
          ['the lost mover', (lost?.value ?? 0) > 3],
          [
            'a check of OPS_FAILING',
            all.some((s) => s.name === 'ecpds_host_check_up' && s.labels.destination === 'OPS_FAILING'),
          ],
          ['a mail waiting', all.some((s) => s.name === 'ecpds_mail_outbox_oldest_seconds' && s.value >= 1)],
          ['a failed attempt of OPS_FAILING', (of('ecpds_destination_failed_last_hour', 'OPS_FAILING') ?? 0) >= 1],
          ['a file waiting on OPS_HELD', of('ecpds_destination_waiting_files', 'OPS_HELD') === 1],
          ['its age', (of('ecpds_destination_oldest_waiting_seconds', 'OPS_HELD') ?? 0) >= 1],
          ["OPS_FAILING's age", (of('ecpds_destination_oldest_waiting_seconds', 'OPS_FAILING') ?? 0) >= 1],
        ];
        missing = conditions.filter(([, met]) => !met).map(([what]) => what);
        return missing.length === 0 ? r.text : undefined;
      },
      60_000,
      'a failed attempt and check of OPS_FAILING, a waiting file on OPS_HELD, the lost mover and a mail waiting',
    ).catch((e: Error) => {
      throw new Error(`${e.message}; still missing: ${missing.join(', ')}`);
    });
    const all = samples(scraped);
    const value = (name: string, labels: Record<string, string> = {}) =>
      all.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value('ecpds_destination_status', { destination: 'OPS_HELD', status: 'HOLD' })).toBe(1);
    expect(
      all.filter((s) => s.name === 'ecpds_destination_status' && s.labels.destination === 'OPS_HELD'),
    ).toHaveLength(1);
    expect(value('ecpds_destination_waiting_files', { destination: 'OPS_FAILING' })).toBe(1);
    expect(value('ecpds_destination_failed_last_hour', { destination: 'OPS_HELD' })).toBe(0);
    expect(value('ecpds_destination_max_pending', { destination: 'OPS_HELD' })).toBe(8000);
    expect(value('ecpds_destination_max_waiting_seconds', { destination: 'OPS_HELD' })).toBe(120);
    expect(value('ecpds_destination_max_waiting_seconds', { destination: 'OPS_FAILING' })).toBeUndefined();
    expect(value('ecpds_wis2_outbox_pending')).toBe(0);
    expect(value('ecpds_wis2_outbox_oldest_seconds')).toBe(0);
    expect(value('ecpds_database_up')).toBe(1);
    expect(value('ecpds_store_up')).toBe(1);
    expect(value('ecpds_host_check_up', { destination: 'OPS_FAILING' })).toBe(0);
    expect(value('ecpds_mover_heartbeat_interval_seconds', { mover: 'ops-lost' })).toBe(1);
    expect(value('ecpds_mover_heartbeat_age_seconds', { mover: 'ops-alive' })).toBeLessThanOrEqual(3);
    expect(value('ecpds_mail_outbox_pending')).toBeGreaterThanOrEqual(1);
  });

  it('passes promtool check rules', () => {
    const r = promtool(['check', 'rules', RULES]);
    expect(r.status, r.output).toBe(0);
  });

  it('fires, over the scraped series an hour on, the alerts of a held destination and a failing one', () => {
    expect(scraped).not.toBe('');
    // The failing destination's host (its id the restore's), the one host checked.
    const checked = samples(scraped).filter((s) => s.name === 'ecpds_host_check_up');
    expect(checked.map((s) => [s.labels.destination, s.value])).toEqual([['OPS_FAILING', 0]]);
    const expected: Record<string, ExpectedAlert[]> = {
      // OPS_HELD, and OPS_FAILING too when its failed round already put it on HOLD.
      EcpdsDestinationOnHold: samples(scraped)
        .filter((s) => s.name === 'ecpds_destination_status' && s.labels.status === 'HOLD')
        .map((s) => alert('EcpdsDestinationOnHold', s.labels, 'warning')),
      EcpdsDestinationWaitingTooLong: ['OPS_FAILING', 'OPS_HELD'].map((destination) =>
        alert('EcpdsDestinationWaitingTooLong', { destination }, 'warning'),
      ),
      EcpdsDestinationFailing: [alert('EcpdsDestinationFailing', { destination: 'OPS_FAILING' }, 'warning')],
      EcpdsDestinationNearMaxPending: [],
      EcpdsHostCheckFailing: [alert('EcpdsHostCheckFailing', checked[0]!.labels, 'warning')],
      EcpdsMoverHeartbeatMissing: [alert('EcpdsMoverHeartbeatMissing', { mover: 'ops-lost' }, 'critical')],
      EcpdsDatabaseUnreachable: [],
      EcpdsScrapeFailing: [],
      EcpdsStoreUnreachable: [],
      EcpdsWis2OutboxBacklog: [],
      // The failures' mails wait: no SMTP server is configured.
      EcpdsMailOutboxBacklog: [alert('EcpdsMailOutboxBacklog', {}, 'warning')],
      EcpdsOutboxGrowing: [],
    };
    const held = expected.EcpdsDestinationOnHold ?? [];
    expect(held.map((a) => (a.exp_labels as Record<string, string>).destination)).toContain('OPS_HELD');
    expect([...notes.keys()].sort()).toEqual(Object.keys(expected).sort());
    const r = promtoolTest(scraped, expected);
    expect(r.status, r.output).toBe(0);
    // Ten minutes in, only the destination whose maxInactivity is two minutes has waited too long.
    const early = promtoolTest(
      scraped,
      {
        EcpdsDestinationWaitingTooLong: [
          alert('EcpdsDestinationWaitingTooLong', { destination: 'OPS_HELD' }, 'warning'),
        ],
      },
      '10m',
    );
    expect(early.status, early.output).toBe(0);
  });

  it("fires the store's alert when its directory is gone, and the database's when it is cut off", async () => {
    const store = path.join(dataDir, 'store');
    fs.renameSync(store, `${store}.away`);
    fs.writeFileSync(store, 'not a directory');
    const metric = async (name: string, value: number) => {
      const r = await request(url, 'GET', '/metrics');
      return samples(r.text).some((s) => s.name === name && s.value === value) ? r.text : undefined;
    };
    const storeDown = await eventually(() => metric('ecpds_store_up', 0), 30_000, 'ecpds_store_up 0');
    let databaseDown: string | null = null;
    if (link) {
      link.cut();
      databaseDown = await eventually(() => metric('ecpds_database_up', 0), 30_000, 'ecpds_database_up 0');
      // Without the database, /metrics still answers, with what needs none.
      expect(databaseDown).not.toContain('ecpds_destination_status');
    }
    fs.rmSync(store);
    fs.renameSync(`${store}.away`, store);

    const storeAlerts = promtoolTest(storeDown, {
      EcpdsStoreUnreachable: [alert('EcpdsStoreUnreachable', {}, 'critical')],
      EcpdsDatabaseUnreachable: [],
    });
    expect(storeAlerts.status, storeAlerts.output).toBe(0);
    if (databaseDown !== null) {
      const databaseAlerts = promtoolTest(databaseDown, {
        EcpdsDatabaseUnreachable: [alert('EcpdsDatabaseUnreachable', {}, 'critical')],
        EcpdsScrapeFailing: [],
      });
      expect(databaseAlerts.status, databaseAlerts.output).toBe(0);
    }
  });

  it('has a dashboard whose every query parses and names only series /metrics has or the others add', () => {
    const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as {
      panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
    };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })));
    expect(exprs.length).toBeGreaterThan(5);
    // Families with no sample now (no mover holds a lease) still have their TYPE line.
    const typed = [...scraped.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
    const known = new Set([...typed, ...samples(scraped).map((s) => s.name), ...NAMED_ELSEWHERE]);
    for (const { title, expr } of exprs) {
      const named = [...expr.matchAll(/\b(ecpds_[a-z0-9_]+|up(?=\{))/g)].map((m) => m[1]!);
      expect(named.length, `${title}: ${expr}`).toBeGreaterThan(0);
      for (const name of named) expect(known.has(name), `${title}: ${name}`).toBe(true);
    }
    // promtool parses PromQL only in rules: each query becomes a recording rule, the dashboard's variables filled.
    const dir = tempDir('ecpds-dashboard-');
    const asRules = {
      groups: [
        {
          name: 'dashboard',
          rules: exprs.map(({ expr }, i) => ({
            record: `dashboard:panel_${i}`,
            expr: expr.replaceAll('$destination', '.+').replaceAll('$__rate_interval', '5m'),
          })),
        },
      ],
    };
    fs.writeFileSync(path.join(dir, 'dashboard.yml'), JSON.stringify(asRules));
    const r = promtool(['check', 'rules', path.join(dir, 'dashboard.yml')]);
    expect(r.status, r.output).toBe(0);
  });
});
