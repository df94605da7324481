import fs from 'node:fs';
import path from 'node:path';

/**
 * The programs outside Node that some tests run (servers they deliver to, clients of the portal,
 * compressors), found in one place. A test that needs one asks `needs('rclone')` (test options:
 * skipped and tagged when it is missing) or `requireTools('rclone')` (the reason, or null); either
 * records what is missing for the run's summary line (see tool-summary-reporter.ts), which CI
 * turns into a failure.
 *
 * ECPDS_TEST_ABSENT_TOOLS=rclone,sshd (or `all`) makes the named tools count as missing, to see
 * what a machine without them does.
 */

interface ToolSpec {
  /** Files that must all exist, or else a command looked up on the PATH. */
  files?: string[];
  command?: string;
  /** Debian packages that install it. */
  packages: string[];
}

const TOOLS = {
  sshd: { files: ['/usr/sbin/sshd', '/usr/lib/openssh/sftp-server'], packages: ['openssh-server'] },
  sftp: { command: 'sftp', packages: ['openssh-client'] },
  ssh: { command: 'ssh', packages: ['openssh-client'] },
  scp: { command: 'scp', packages: ['openssh-client'] },
  'ssh-keygen': { command: 'ssh-keygen', packages: ['openssh-client'] },
  'ssh-keyscan': { command: 'ssh-keyscan', packages: ['openssh-client'] },
  sshpass: { command: 'sshpass', packages: ['sshpass'] },
  // FTPS needs mod_tls, from proftpd-mod-crypto.
  proftpd: {
    files: ['/usr/sbin/proftpd', '/usr/lib/proftpd/mod_tls.so'],
    packages: ['proftpd-core', 'proftpd-mod-crypto'],
  },
  openssl: { command: 'openssl', packages: ['openssl'] },
  nginx: { files: ['/usr/sbin/nginx'], packages: ['nginx'] },
  'nginx-dav-ext': {
    files: ['/usr/lib/nginx/modules/ngx_http_dav_ext_module.so'],
    packages: ['libnginx-mod-http-dav-ext'],
  },
  mosquitto: { files: ['/usr/sbin/mosquitto'], packages: ['mosquitto'] },
  mosquitto_sub: { command: 'mosquitto_sub', packages: ['mosquitto-clients'] },
  chromium: { files: ['/usr/bin/chromium'], packages: ['chromium'] },
  rclone: { command: 'rclone', packages: ['rclone'] },
  wget: { command: 'wget', packages: ['wget'] },
  curl: { command: 'curl', packages: ['curl'] },
  aws: { command: 'aws', packages: ['awscli'] },
  s3cmd: { command: 's3cmd', packages: ['s3cmd'] },
  lftp: { command: 'lftp', packages: ['lftp'] },
  jq: { command: 'jq', packages: ['jq'] },
  // Checks and tests docs/ops/prometheus-alerts.yml.
  promtool: { command: 'promtool', packages: ['prometheus'] },
  ps: { command: 'ps', packages: ['procps'] },
  // The Node filters run them from /usr/bin.
  zstd: { files: ['/usr/bin/zstd'], packages: ['zstd'] },
  bzip2: { files: ['/usr/bin/bzip2'], packages: ['bzip2'] },
  xz: { files: ['/usr/bin/xz'], packages: ['xz-utils'] },
} satisfies Record<string, ToolSpec>;

export type Tool = keyof typeof TOOLS;
export const TOOL_NAMES = Object.keys(TOOLS) as Tool[];

/** Where the test processes of a run record what they found missing (set by the summary reporter). */
export const RECORDS_ENV = 'ECPDS_TEST_TOOL_RECORDS';
export const ABSENT_ENV = 'ECPDS_TEST_ABSENT_TOOLS';

declare module 'vitest' {
  interface TaskMeta {
    /** The tools whose absence skipped this test or suite. */
    missingTools?: string[];
  }
}

/** The tools ECPDS_TEST_ABSENT_TOOLS makes count as missing; an unknown name is an error, not a no-op. */
function absentByRequest(): Set<string> {
  const value = (process.env[ABSENT_ENV] ?? '').trim();
  if (value === '') return new Set();
  if (value === 'all') return new Set(TOOL_NAMES);
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(name in TOOLS));
  if (unknown.length > 0) {
    throw new Error(`${ABSENT_ENV}: unknown tool ${unknown.join(', ')} (known: all, ${TOOL_NAMES.join(', ')})`);
  }
  return new Set(names);
}

function onPath(command: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      fs.accessSync(path.join(dir, command), fs.constants.X_OK);
      return true;
    } catch {}
  }
  return false;
}

const found = new Map<Tool, boolean>();
function present(tool: Tool): boolean {
  if (absentByRequest().has(tool)) return false;
  let known = found.get(tool);
  if (known === undefined) {
    const spec: ToolSpec = TOOLS[tool];
    known = spec.files ? spec.files.every((file) => fs.existsSync(file)) : onPath(spec.command!);
    found.set(tool, known);
  }
  return known;
}

/** Which of the tools are missing here (nothing recorded). */
export function missingTools(...tools: Tool[]): Tool[] {
  for (const tool of tools) if (!(tool in TOOLS)) throw new Error(`unknown tool ${tool}`);
  return [...new Set(tools)].filter((tool) => !present(tool));
}

/** The Debian packages that install the tools, once each. */
export function packagesOf(tools: Iterable<string>): string[] {
  const packages = new Set<string>();
  for (const tool of tools) for (const p of (TOOLS as Record<string, ToolSpec>)[tool]?.packages ?? []) packages.add(p);
  return [...packages];
}

export const installCommand = (tools: Iterable<string>) => `apt-get install -y ${packagesOf(tools).join(' ')}`;

/** The test file this process is running (vitest's worker state), for the run's records. */
function currentTestFile(): string | null {
  const state = (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__;
  return state?.filepath ?? null;
}

/** Appends what is missing to this process's record file, read by the summary at the end of the run. */
function record(missing: string[]) {
  const dir = process.env[RECORDS_ENV];
  if (!dir || missing.length === 0) return;
  fs.mkdirSync(dir, { recursive: true });
  fs.appendFileSync(
    path.join(dir, `${process.pid}.jsonl`),
    `${JSON.stringify({ file: currentTestFile(), tools: missing })}\n`,
  );
}

/** Why a test needing these tools cannot run here (naming them and their install command), or null. */
export function requireTools(...tools: Tool[]): string | null {
  const missing = missingTools(...tools);
  if (missing.length === 0) return null;
  record(missing);
  return `missing ${missing.join(', ')} (${installCommand(missing)})`;
}

/**
 * Test options for a test or suite that needs these tools: skipped when one is missing, and tagged
 * with what was missing so that the summary counts it. `describe('…', needs('rclone'), () => …)`.
 */
export function needs(...tools: Tool[]): { skip: boolean; meta: { missingTools: string[] } } {
  const missing = missingTools(...tools);
  record(missing);
  return { skip: missing.length > 0, meta: { missingTools: missing } };
}
