import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Mosquitto, startMosquitto } from './portal/wis2/support.ts';
import { childEnv, freePort, ROOT, removeTempDirs, tempDir } from './support/processes.ts';
import { scaled } from './support/time.ts';
import { needs } from './support/tools.ts';

// The API and data portal examples of the README, run in the order shown against a fresh `npm start` (demo data),
// each answering what the README shows: a newcomer who copies them gets the same answers. The portal's clients
// (wget, rclone, OpenSSH, lftp, the AWS command line, s3cmd, mosquitto_sub) run as curl does, against the SFTP
// port and S3 listener of that start and a Mosquitto broker of its own (ECPDS_MQTT_URL).

/** The commands run: curl, head, and the portal's clients. */
const RUN = /^(curl|head|wget|rclone|sshpass|sftp|scp|lftp|aws|s3cmd|mosquitto_sub) /;

interface Example {
  command: string;
  /** The answer shown: `#   <answer>` on the next line, or a JSON comment on the same line. */
  answer?: string;
}

/** The shell steps of the sections from "The API" to the worked example, in order. */
function readmeExamples(): Example[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## The API\n'), readme.indexOf('\n## Administration console\n'));
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
      // `npx ecpds-edge` lines are commands on the database: the README runs them with the server stopped.
      if (!RUN.test(line)) continue;
      const [command, comment] = line.split(/\s+#\s+(.*)/);
      const next = /^# {3}(.*)$/.exec(lines[i + 1] ?? '')?.[1];
      examples.push({ command: command!, answer: next ?? (/^[{[]/.test(comment ?? '') ? comment : undefined) });
    }
  }
  return examples;
}

/** The value a line of the README gives a shell variable (`K="..."` or `T=...`), which the lines use. */
function readmeValue(readme: string, name: string): string {
  const m = new RegExp(`^(?:.* )?${name}=("[^"]*"|\\S+)`, 'm').exec(readme);
  if (!m) throw new Error(`README sets no ${name}`);
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
  dir = fs.realpathSync(tempDir('ecpds-readme-'));
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

describe('the README examples on a fresh npm start', TOOLS, () => {
  it('answer what the README shows, in order', { timeout: scaled(180_000) }, () => {
    const examples = readmeExamples();
    expect(examples.length).toBeGreaterThan(40);
    const portalPassword = /Data portal user '[^']+' created\. Its password is shown this once:\s+(\S+)/.exec(
      output,
    )![1]!;
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    // A reader's environment: a HOME of its own (no ~/.aws, ~/.s3cfg, rclone or lftp configuration; OpenSSH takes
    // ~/.ssh from the passwd entry, but the lines give it a known_hosts file of their own), nothing of the clients'.
    const clean = Object.entries(process.env).filter(
      ([k]) => !/^(AWS_.*|RCLONE_.*|S3CMD_.*|LFTP_.*|SSHPASS|XDG_CONFIG_HOME|SSH_AUTH_SOCK)$/.test(k),
    );
    const env = {
      ...Object.fromEntries(clean),
      HOME: tempDir('ecpds-readme-home-'),
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
      K: readmeValue(readme, 'K'),
      M: broker!.url,
      T: readmeValue(readme, 'T'),
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
