import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import ssh2 from 'ssh2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mover, startMover } from '../../core/dissemination/mover.ts';
import { optionLine } from '../../core/hosts/options.ts';
import { dataTransfers, transferHistory } from '../../db/schema.ts';
import { nodeSourceReader } from '../../functions/node/sources.ts';
import { nodeFilters } from '../../functions/transfer-methods/filters.ts';
import { nodeTransferMethods } from '../../functions/transfer-methods/index.ts';
import type { TestHost } from '../support/backups.ts';
import { eventually, restoreDestination } from '../support/engine.ts';
import { createHarness, type Harness } from '../support/harness.ts';
import { type FaultyHosts, HOST_FAULTS, type HostFault, startFaultyHosts } from '../support/servers/faulty-hosts.ts';
import { type HttpSink, startHttpSink } from '../support/servers/http-sink.ts';
import { type S3TestServer, startS3 } from '../support/servers/s3.ts';
import { type FaultServer, startFaultServer } from '../support/servers/sftp-faults.ts';

/**
 * Every transfer method of a Node mover, through the mover as the product runs it, against hosts
 * that fail at the TCP level (refused, unreachable, reset, stalled, a garbage banner) and with
 * options an operator could get wrong (keys, ports, timeouts, URLs, regions, filters). Each
 * attempt fails with a reason in the transfer's history, nothing escapes as an uncaught error
 * (which would end a mover's process), and good transfers sent afterwards are delivered.
 * Timeouts are the hosts' own options, short, so that a stalled host costs a second.
 */
/**
 * A host that never answers costs its timeouts; one that fails at once gets long ones, so that a
 * machine under load never turns its reason into a timeout.
 */
const QUICK = 'ectrans.connectTimeOut = "2s"\nectrans.streamTimeout = "8s"\nectrans.putTimeOut = "15s"';
const PATIENT = 'ectrans.connectTimeOut = "30s"\nectrans.streamTimeout = "30s"';
const SILENT: readonly HostFault[] = ['unreachable', 'stalled', 'garbage'];
const SIZE = 256 * 1024;

let h: Harness;
let admin: string;
let sources: string;
let delivered: string;
let mover: Mover;
let faulty: FaultyHosts;
let sftp: FaultServer;
/** An SFTP server that answers an open with a malformed packet. */
let sftpMalformed: FaultServer;
let sink: HttpSink;
let s3: S3TestServer;
const uncaught: unknown[] = [];
const onUncaught = (error: unknown) => void uncaught.push(error);

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  sources = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-faults-src-')));
  delivered = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-faults-dst-')));
  [h, faulty, sftp, sftpMalformed, sink, s3] = await Promise.all([
    createHarness({ sourceRoots: [sources] }),
    startFaultyHosts(),
    startFaultServer(),
    startFaultServer(),
    startHttpSink(),
    startS3(),
  ]);
  admin = await h.client('operator', ['.*']);
  sftpMalformed.faults = { malformedHandle: true };
  mover = startMover(
    {
      ports: h.ports,
      methods: nodeTransferMethods({ fileRoots: [delivered] }),
      filters: nodeFilters(),
      sources: nodeSourceReader({ roots: [sources], hosts: [] }),
    },
    {
      name: 'faults',
      concurrency: 64,
      leaseMs: 10_000,
      heartbeatMs: 500,
      pollMs: 40,
    },
  );
}, 60_000);
afterAll(async () => {
  await mover?.stop(2000);
  await Promise.all([h?.close(), faulty?.stop(), sftp?.stop(), sftpMalformed?.stop(), sink?.stop(), s3?.stop()]);
  process.off('uncaughtException', onUncaught);
  process.off('unhandledRejection', onUncaught);
  fs.rmSync(sources, { recursive: true, force: true });
  fs.rmSync(delivered, { recursive: true, force: true });
});

let files = 0;
async function put(destination: string) {
  const file = path.join(sources, `src-${++files}.bin`);
  fs.writeFileSync(file, randomBytes(SIZE));
  const q = new URLSearchParams({
    destination,
    source: file,
    target: `out/${files}.bin`,
  });
  const r = await h.call('GET', `/v1/datafile/put?${q}`, { auth: admin });
  expect(r.status, r.text).toBe(200);
  const [t] = await h.db.select().from(dataTransfers).where(eq(dataTransfers.dataFileId, r.json.id));
  return t!;
}

/** The comment of the transfer's first failed attempt (its STOP), once there is one. */
const failureOf = (transferId: number) => async () => {
  const rows = await h.db
    .select({
      status: transferHistory.status,
      comment: transferHistory.comment,
    })
    .from(transferHistory)
    .where(eq(transferHistory.transferId, transferId))
    .orderBy(asc(transferHistory.id));
  const stop = rows.find((r) => r.status === 'STOP');
  return stop ? (stop.comment ?? '') : undefined;
};
const statusOf = async (id: number) =>
  (await h.db.select().from(dataTransfers).where(eq(dataTransfers.id, id)))[0]!.status;

interface Case {
  name: string;
  host: Omit<TestHost, 'retryCount' | 'retryFrequency'>;
  /** What the failure's comment says. */
  reason: RegExp;
}

const at = (fault: HostFault) => {
  const { hostname, port } = faulty.address(fault);
  return `${hostname}:${port}`;
};
const data = (...lines: string[]) => [PATIENT, ...lines].join('\n');
/** The host's data with the timeouts for a host that may never answer. */
const quick = (host: Case['host']): Case['host'] => ({
  ...host,
  data: host.data!.replace(PATIENT, QUICK),
});

/** Why each fault fails an attempt, in the words of any of the methods. */
const FAULT_REASONS: Record<HostFault, RegExp> = {
  refused: /ECONNREFUSED|refused/i,
  // A network that rejects the address (as a sandbox's may) refuses it at once.
  unreachable: /unreachable|timed? ?out|timeout|stalled|ENETUNREACH|EHOSTUNREACH|ECONNREFUSED/i,
  stalled: /timed? ?out|timeout|stalled/i,
  garbage: /.+/,
  reset: /ECONNRESET|reset|closed|lost|other side|terminated/i,
};

/** A host of each method on `address`, otherwise well configured. */
const hostOf: Record<string, (address: string) => Case['host']> = {
  sftp: (address) => ({
    method: 'sftp',
    host: address,
    login: 'u',
    passwd: 'pw-secret',
    dir: 'in',
    data: data(),
  }),
  ftp: (address) => ({
    method: 'ftp',
    host: address,
    login: 'u',
    passwd: 'pw-secret',
    dir: 'in',
    data: data(),
  }),
  ftps: (address) => ({
    method: 'ftps',
    host: address,
    login: 'u',
    passwd: 'pw-secret',
    dir: 'in',
    data: data(),
  }),
  s3: (address) => ({
    method: 's3',
    host: address,
    login: 'AKIA',
    passwd: 'secret',
    dir: 'in',
    data: data(`s3.url = "http://${address}"`, 's3.bucketName = "b"', 's3.enablePathStyleAccess = "yes"'),
  }),
  http: (address) => ({
    method: 'http',
    host: address,
    dir: 'in',
    data: data('http.scheme = "http"'),
  }),
  azure: (address) => ({
    method: 'azure',
    host: address,
    login: 'account',
    passwd: Buffer.from('key').toString('base64'),
    dir: 'container',
    data: data(`azure.url = "http://${address}/account"`),
  }),
  webdav: (address) => ({
    method: 'webdav',
    host: address,
    dir: 'in',
    data: data('webdav.scheme = "http"'),
  }),
};

function faultCases(): Case[] {
  return Object.entries(hostOf).flatMap(([method, hostAt]) =>
    HOST_FAULTS.map((fault) => {
      const host = hostAt(at(fault));
      return {
        name: `${method} ${fault}`,
        host: SILENT.includes(fault) ? quick(host) : host,
        reason: FAULT_REASONS[fault],
      };
    }),
  );
}

const NOT_A_KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----';

function optionCases(): Case[] {
  const silent = SILENT.map(at);
  return optionCaseList().map((c) =>
    silent.includes(c.host.host ?? '') && c.host.data?.includes(PATIENT) ? { ...c, host: quick(c.host) } : c,
  );
}

function optionCaseList(): Case[] {
  const good = `127.0.0.1:${sftp.port}`;
  const sftpHost = (address: string, ...lines: string[]) => ({
    method: 'sftp' as const,
    host: address,
    login: sftp.user,
    passwd: sftp.password,
    dir: 'in',
    data: data(...lines),
  });
  return [
    {
      name: 'sftp privateKey not a key, port refused',
      host: sftpHost(at('refused'), 'sftp.privateKey = "not a key"'),
      reason: /sftp\.privateKey/,
    },
    {
      name: 'sftp privateKey not a key, good server',
      host: sftpHost(good, optionLine('sftp.privateKey', NOT_A_KEY)),
      reason: /sftp\.privateKey/,
    },
    {
      name: 'sftp privateKey with a wrong passPhrase',
      host: sftpHost(at('refused'), optionLine('sftp.privateKey', ENCRYPTED_KEY), 'sftp.passPhrase = "wrong"'),
      reason: /sftp\.privateKey/,
    },
    {
      name: 'sftp fingerPrint that is not one',
      host: sftpHost(good, 'sftp.fingerPrint = "%%% not a fingerprint"'),
      reason: /does not match sftp\.fingerPrint/,
    },
    {
      name: 'sftp port out of range, serverAliveInterval negative',
      host: sftpHost(at('refused'), 'sftp.port = "99999"', 'sftp.serverAliveInterval = "-5"'),
      reason: /ECONNREFUSED|refused/i,
    },
    {
      name: 'sftp connectTimeOut not a duration, garbage banner',
      host: {
        ...sftpHost(at('garbage')),
        data: 'ectrans.connectTimeOut = "soon"\nectrans.putTimeOut = "2s"',
      },
      reason: /.+/,
    },
    {
      name: 'sftp gzip filter, port refused',
      host: { ...sftpHost(at('refused')), filterName: 'gzip' },
      reason: /ECONNREFUSED|refused/i,
    },
    {
      name: 'sftp server answering an open with a malformed packet',
      host: {
        ...sftpHost(`127.0.0.1:${sftpMalformed.port}`),
        login: sftpMalformed.user,
        passwd: sftpMalformed.password,
      },
      reason: /Malformed HANDLE packet/,
    },
    {
      name: 'sftp unknown filter',
      host: { ...sftpHost(good), filterName: 'nofilter' },
      reason: /nofilter/,
    },
    {
      name: 'ftps connectionType not a type, garbage banner',
      host: {
        ...hostOf.ftps!(at('garbage')),
        data: data('ftps.connectionType = "TLS!!"'),
      },
      reason: /.+/,
    },
    {
      name: 'ftps implicit TLS, garbage banner',
      host: {
        ...hostOf.ftps!(at('garbage')),
        data: data('ftps.connectionType = "FTPS"'),
      },
      reason: /.+/,
    },
    {
      name: 'ftp connectTimeOut zero, reset',
      host: {
        ...hostOf.ftp!(at('reset')),
        data: 'ectrans.connectTimeOut = "0"\nectrans.putTimeOut = "2s"',
      },
      reason: /.+/,
    },
    {
      name: 's3 url that is not one',
      host: {
        ...hostOf.s3!(at('refused')),
        data: data('s3.url = "http://[::1"', 's3.bucketName = "b"'),
      },
      reason: /url|invalid/i,
    },
    {
      name: 's3 region with a line break, sizes not numbers',
      host: {
        ...hostOf.s3!(at('stalled')),
        data: data(
          `s3.url = "http://${at('stalled')}"`,
          's3.bucketName = "b"',
          's3.region = "eu\\r\\nX-Injected: 1"',
          's3.multipartSize = "-1"',
          's3.partSize = "lots"',
        ),
      },
      reason: /.+/,
    },
    {
      name: 's3 bucket name with spaces, url scheme ftp',
      host: {
        ...hostOf.s3!(at('refused')),
        data: data('s3.url = "ftp://127.0.0.1:1"', 's3.bucketName = "a b/c"'),
      },
      reason: /.+/,
    },
    {
      name: 'http scheme gopher',
      host: {
        ...hostOf.http!(at('refused')),
        data: data('http.scheme = "gopher"'),
      },
      reason: /http\.scheme/,
    },
    {
      name: 'http authheader with a line break',
      host: {
        ...hostOf.http!(at('stalled')),
        data: data('http.scheme = "http"', 'http.authheader = "X: a\\r\\nY: b"'),
      },
      reason: /.+/,
    },
    {
      name: 'http streamTimeout negative, port refused',
      host: {
        ...hostOf.http!(at('refused')),
        data: 'ectrans.streamTimeout = "-1s"\nhttp.scheme = "http"',
      },
      reason: /ECONNREFUSED|refused/i,
    },
    {
      name: 'azure sasUrl that is not a URL',
      host: {
        method: 'azure',
        host: at('refused'),
        dir: 'c',
        data: data('azure.sasUrl = "::"', 'azure.sasSubscriptionKey = "k"'),
      },
      reason: /url|invalid/i,
    },
    {
      name: 'azure key that is not base64',
      host: { ...hostOf.azure!(at('stalled')), passwd: '!!! not base64 ☃' },
      reason: /.+/,
    },
    {
      name: 'webdav scheme ftp',
      host: {
        ...hostOf.webdav!(at('refused')),
        data: data('webdav.scheme = "ftp"'),
      },
      reason: /webdav\.scheme/,
    },
    {
      name: 'webdav path of garbage, garbage banner',
      host: {
        ...hostOf.webdav!(at('garbage')),
        data: data('webdav.scheme = "http"', 'webdav.path = "%%/../ \\r"'),
      },
      reason: /.+/,
    },
    {
      name: 'file directory outside the roots',
      host: { method: 'file', dir: path.join(os.tmpdir(), 'elsewhere') },
      reason: /not under a file host root/,
    },
    {
      name: 'file directory that is a file',
      host: { method: 'file', dir: path.join(delivered, 'a-file') },
      reason: /EEXIST|ENOTDIR|not a directory|exists/i,
    },
  ];
}

/** An ed25519 key encrypted with the passphrase "right". */
const ENCRYPTED_KEY = ssh2.utils.generateKeyPairSync('ed25519', {
  passphrase: 'right',
  cipher: 'aes256-ctr',
  rounds: 16,
}).private;

describe('every transfer method against faulty hosts and malformed options', () => {
  it('fails each attempt with a reason, nothing uncaught, and delivers the good transfers sent next', async () => {
    fs.writeFileSync(path.join(delivered, 'a-file'), 'in the way');
    const cases = [...faultCases(), ...optionCases()];
    const sent = await Promise.all(
      cases.map(async (c, i) => {
        const name = `FAULT_${i}`;
        await restoreDestination(h, admin, name, [{ ...c.host, retryCount: 0, retryFrequency: 60_000 }], {
          destination: { retryCount: 0 },
        });
        return { c, transfer: await put(name) };
      }),
    );
    const reasons = await Promise.all(
      sent.map(async ({ c, transfer }) => ({
        name: c.name,
        reason: await eventually(failureOf(transfer.id), 30_000, `${c.name} to fail`),
      })),
    );
    // Every case's reason at once: a failure shows them all. Never the password, whatever a server echoed.
    const unexplained = reasons.filter(
      ({ reason }, i) => !cases[i]!.reason.test(reason) || reason.includes('pw-secret'),
    );
    expect(unexplained).toEqual([]);
    expect(uncaught).toEqual([]);

    // The same mover delivers what comes next, over the methods that just failed.
    const goodHosts: TestHost[][] = [
      [
        {
          method: 'sftp',
          host: `127.0.0.1:${sftp.port}`,
          login: sftp.user,
          passwd: sftp.password,
          dir: 'good',
        },
      ],
      [
        {
          method: 'http',
          host: `127.0.0.1:${sink.port}`,
          dir: 'good',
          data: 'http.scheme = "http"',
        },
      ],
      [
        {
          method: 's3',
          host: new URL(s3.url).host,
          login: s3.accessKeyId,
          passwd: s3.secretAccessKey,
          dir: 'good',
          data: `s3.bucketName = "${s3.bucket}"\ns3.url = "${s3.url}"\ns3.enablePathStyleAccess = "yes"`,
        },
      ],
      [{ method: 'file', dir: path.join(delivered, 'good') }],
    ];
    const good = await Promise.all(
      goodHosts.map(async (hosts, i) => {
        await restoreDestination(h, admin, `GOOD_${i}`, hosts);
        return put(`GOOD_${i}`);
      }),
    );
    for (const t of good) {
      await eventually(async () => ((await statusOf(t.id)) === 'DONE' ? true : undefined), 20_000, `${t.id} DONE`);
    }
    expect(sftp.files().filter((f) => f.startsWith('good/'))).toHaveLength(1);
    expect(sink.requests.filter((r) => r.url.startsWith('/good/') && !r.incomplete)).toHaveLength(1);
    expect(uncaught).toEqual([]);
  }, 120_000);
});
