import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mosquitto, startMosquitto } from '../portal/wis2/support.ts';
import { childEnv, freePort, ROOT, removeTempDirs, tempDir } from '../support/processes.ts';
import { scaled } from '../support/time.ts';
import { needs } from '../support/tools.ts';

// The examples of the README's tour and of the guides' API and data portal sections, run in the order a reader
// meets them against a fresh `npm start` (demo data), each answering what the page shows: a newcomer who copies
// them gets the same answers. The portal's clients (wget, rclone, OpenSSH, lftp, the AWS command line, s3cmd,
// mosquitto_sub) run as curl does, against the SFTP port and S3 listener of that start and a Mosquitto broker of
// its own (ECPDS_MQTT_URL).

/** The commands run: curl, head, and the portal's clients. */
const RUN = /^(curl|head|wget|rclone|sshpass|sftp|scp|lftp|aws|s3cmd|mosquitto_sub) /;

interface Example {
  command: string;
  /** The answer shown: `#   <answer>` on the next line, or a JSON comment on the same line. */
  answer?: string;
}

/**
 * The sections whose examples run, in the order they must run: the later ones use what the earlier ones made
 * (data file and host ids, the web user ops1, the file put for the WIS2 notification). Each is its heading and
 * everything below it up to the next heading of the same or a higher level.
 */
const RUNS: ReadonlyArray<{ file: string; heading: string }> = [
  { file: 'README.md', heading: '## A five-minute tour' },
  { file: 'docs/pipelines.md', heading: '## The API' },
  { file: 'docs/operators.md', heading: '### A worked example' },
  { file: 'docs/operators.md', heading: '## Acquisition' },
  { file: 'docs/consumers.md', heading: '## Data portal' },
];

/** A section of a page: its heading line up to the next heading of the same or a higher level, outside code. */
function sectionOf(file: string, heading: string): string {
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`${file} has no heading ${heading}`);
  const level = heading.indexOf(' ');
  let fenced = false;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) fenced = !fenced;
    const h = !fenced && /^(#+) /.exec(line);
    if (h && h[1]!.length <= level) return lines.slice(start, i).join('\n');
  }
  return lines.slice(start).join('\n');
}

/** The text of every section that runs, in order. */
const docsText = () => RUNS.map(({ file, heading }) => sectionOf(file, heading)).join('\n');

/** The shell steps of those sections, in order. */
function docsExamples(): Example[] {
  const section = docsText();
  const examples: Example[] = [];
  for (const [, block] of section.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block!.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const heredoc = /<<'(\w+)'$/.exec(line);
      if (heredoc) {
        const end = lines.indexOf(heredoc[1]!, i);
        examples.push({ command: lines.slice(i, end + 1).join('\n') });
        i = end;
        continue;
      }
      // `npx ecpds-edge` lines are commands on the database: the pages run them with the server stopped.
      if (!RUN.test(line)) continue;
      const [command, comment] = line.split(/\s+#\s+(.*)/);
      const next = /^# {3}(.*)$/.exec(lines[i + 1] ?? '')?.[1];
      examples.push({ command: command!, answer: next ?? (/^[{[]/.test(comment ?? '') ? comment : undefined) });
    }
  }
  return examples;
}

/** The value a line of the pages gives a shell variable (`K="..."` or `T=...`), which the lines use. */
function docsValue(text: string, name: string): string {
  const m = new RegExp(`^(?:.* )?${name}=("[^"]*"|\\S+)`, 'm').exec(text);
  if (!m) throw new Error(`the examples set no ${name}`);
  return m[1]!.replace(/^"(.*)"$/, '$1');
}

/** The shown answer as a whole-text pattern: `...` stands for anything, `<generated>` for a value. */
const shown = (answer: string) =>
  new RegExp(
    `^${answer
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/\\\.\\\.\\\./g, '.*')
      .replace(/<generated>/g, '[^"]+')}$`,
    's',
  );

let dir: string;
let npm: ChildProcess | undefined;
let broker: Mosquitto | undefined;
let output = '';
let url: string;
let secret: string;
let sftpPort: number;
let s3Port: number;
/** The server's own pid (the one `<data dir>/server.lock` names), under npm's. */
let server: number;

/** What the lines run (jq after curl, ssh under lftp), and the broker of the WIS2 example. */
const TOOLS = needs(
  'curl',
  'jq',
  'wget',
  'rclone',
  'sshpass',
  'sftp',
  'scp',
  'ssh',
  'lftp',
  'aws',
  's3cmd',
  'mosquitto',
  'mosquitto_sub',
);

beforeAll(async () => {
  if (TOOLS.skip) return;
  dir = fs.realpathSync(tempDir('ecpds-examples-'));
  broker = await startMosquitto();
  const [port, sftp, s3] = [await freePort(), await freePort(), await freePort()];
  [sftpPort, s3Port] = [sftp, s3];
  const env = childEnv({
    ECPDS_DATA_DIR: path.join(dir, 'data'),
    PORT: String(port),
    ECPDS_DEMO: '1',
    ECPDS_PORTAL_SFTP_PORT: String(sftp),
    ECPDS_PORTAL_S3_PORT: String(s3),
    ECPDS_MQTT_URL: broker.url,
  });
  npm = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  npm.stdout!.setEncoding('utf8').on('data', (c: string) => void (output += c));
  npm.stderr!.setEncoding('utf8').on('data', (c: string) => void (output += c));
  const started = () => /"msg":"listening"/.test(output) && /Data portal user[^\n]*\n\s+\S+\s/.test(output);
  for (let waited = 0; !started(); waited++) {
    if (npm.exitCode !== null || waited > 1000) throw new Error(`npm start did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  url = `https://127.0.0.1:${port}`;
  secret = /Its secret is shown this once:\s+(\S+)/.exec(output)![1]!;
  server = Number(fs.readFileSync(path.join(dir, 'data/server.lock'), 'utf8').trim());
});

afterAll(async () => {
  if (server && alive(server)) process.kill(server, 'SIGKILL');
  if (npm && npm.exitCode === null) npm.kill('SIGKILL');
  await broker?.close();
  removeTempDirs();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the examples of the README and the guides on a fresh npm start', TOOLS, () => {
  it('answer what the pages show, in order', { timeout: scaled(180_000) }, () => {
    const examples = docsExamples();
    expect(examples.length).toBeGreaterThan(40);
    // The tour is there, first, and runs too.
    expect(examples[0]!.command).toMatch(/^curl \$A \$U\/version/);
    const portalPassword = /Data portal user '[^']+' created\. Its password is shown this once:\s+(\S+)/.exec(
      output,
    )![1]!;
    const text = docsText();
    // A reader's environment: a HOME of its own (no ~/.aws, ~/.s3cfg, rclone or lftp configuration; OpenSSH takes
    // ~/.ssh from the passwd entry, but the lines give it a known_hosts file of their own), nothing of the clients'.
    const clean = Object.entries(process.env).filter(
      ([k]) => !/^(AWS_.*|RCLONE_.*|S3CMD_.*|LFTP_.*|SSHPASS|XDG_CONFIG_HOME|SSH_AUTH_SOCK)$/.test(k),
    );
    const env = {
      ...Object.fromEntries(clean),
      HOME: tempDir('ecpds-examples-home-'),
      A: `-sk -u admin:${secret}`,
      U: `${url}/v1`,
      P: `${url}/portal/data`,
      PW: portalPassword,
      // What the first lines of the portal's Clients and WIS2 notifications examples set, on this start's ports.
      SP: String(sftpPort),
      S3: `https://127.0.0.1:${s3Port}`,
      SSHPASS: portalPassword,
      AWS_ACCESS_KEY_ID: 'demo_reader',
      AWS_SECRET_ACCESS_KEY: portalPassword,
      K: docsValue(text, 'K'),
      M: broker!.url,
      T: docsValue(text, 'T'),
    };
    for (const { command, answer } of examples) {
      const r = spawnSync('bash', ['-o', 'pipefail', '-c', command], {
        cwd: dir,
        env,
        encoding: 'utf8',
        timeout: scaled(60_000),
      });
      expect(r.stderr, command).toBe('');
      // Calls print their status; other commands (and a curl writing a file) print nothing unless shown.
      const quiet = !/^curl /.test(command) || / > /.test(command);
      const expected = answer ? shown(answer) : quiet ? /^$/ : /^\{"status":"ok"\}$/;
      expect(r.stdout.trim(), command).toMatch(expected);
    }
  });

  it('delivered the first file put for MO_EXETER, as they say', async () => {
    const delivered = path.join(dir, 'data/delivered/MO_EXETER/fc.grib');
    for (let i = 0; i < scaled(100) && !fs.existsSync(delivered); i++) await new Promise((r) => setTimeout(r, 100));
    expect(fs.statSync(delivered).size).toBe(1048576);
  });

  it('stop when the pid of npm start gets SIGTERM', async () => {
    expect([server, alive(server)]).toEqual([expect.any(Number), true]);
    expect(server).not.toBe(npm!.pid);
    npm!.kill('SIGTERM');
    for (let i = 0; i < scaled(150) && alive(server); i++) await new Promise((r) => setTimeout(r, 100));
    expect(alive(server)).toBe(false);
    expect(output).toContain('"msg":"stopped"');
  });
});
