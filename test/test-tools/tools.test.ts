import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/processes.ts';
import { ABSENT_ENV, installCommand, missingTools, RECORDS_ENV, requireTools } from '../support/tools.ts';

/**
 * The tests' external tools, found in one place: what a machine without them does (the tests that
 * need them skipped, one summary line naming them and their install command) and what CI does
 * (the same line, and the run fails). ECPDS_TEST_ABSENT_TOOLS stands in for the missing tools.
 */
const FIXTURES = path.join(ROOT, 'test/test-tools/fixtures');
const SUMMARY =
  'skipped 5 tests: missing curl, nginx, rclone, sshd — install with: apt-get install -y curl nginx rclone openssh-server';

/** The fixture tests run by vitest in a process of their own, every tool counted as missing. */
function runFixtures(env: Record<string, string | undefined>) {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', path.join(FIXTURES, 'vitest.config.ts')],
    {
      cwd: ROOT,
      env: { ...process.env, [ABSENT_ENV]: 'all', NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise<{ code: number | null; output: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, output })),
  );
}

const saved = { absent: process.env[ABSENT_ENV], records: process.env[RECORDS_ENV] };
beforeEach(() => {
  // What this file pretends is missing is none of this run's business.
  delete process.env[RECORDS_ENV];
});
afterEach(() => {
  for (const [name, value] of [
    [ABSENT_ENV, saved.absent],
    [RECORDS_ENV, saved.records],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('ECPDS_TEST_ABSENT_TOOLS', () => {
  it('makes the named tools, or all, count as missing, with the packages that install them', () => {
    process.env[ABSENT_ENV] = 'rclone, sshd';
    expect(missingTools('rclone', 'sshd')).toEqual(['rclone', 'sshd']);
    expect(requireTools('sshd', 'rclone')).toBe('missing sshd, rclone (apt-get install -y openssh-server rclone)');
    process.env[ABSENT_ENV] = 'all';
    expect(missingTools('zstd', 'xz', 'proftpd')).toEqual(['zstd', 'xz', 'proftpd']);
    expect(installCommand(['proftpd', 'sftp', 'scp'])).toBe(
      'apt-get install -y proftpd-core proftpd-mod-crypto openssh-client',
    );
  });

  it('refuses a name it does not know, rather than testing with the tool', () => {
    process.env[ABSENT_ENV] = 'rclone,rclonee';
    expect(() => missingTools('rclone')).toThrow(/unknown tool rclonee/);
  });
});

describe('a run on a machine without the tools', () => {
  it('skips the tests that need them and names them once, with the install command', async () => {
    const run = await runFixtures({ CI: undefined });
    expect(run.code, run.output).toBe(0);
    expect(run.output.split('\n').filter((line) => line.startsWith('skipped '))).toEqual([SUMMARY]);
    expect(run.output).toMatch(/Tests\s+1 passed \| 6 skipped \(7\)/);
  });

  it('fails under CI, with the same line', async () => {
    const run = await runFixtures({ CI: 'true' });
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain(SUMMARY);
  });

  it('says nothing when no tool is missing', async () => {
    const run = await runFixtures({ CI: 'true', [ABSENT_ENV]: '' });
    // The fixtures' tools may really be missing here: then only they are named.
    const line = run.output.split('\n').find((l) => l.startsWith('skipped '));
    process.env[ABSENT_ENV] = '';
    const really = missingTools('curl', 'nginx', 'rclone', 'sshd');
    if (really.length === 0) {
      expect(line, run.output).toBeUndefined();
      expect(run.code, run.output).toBe(0);
    } else {
      expect(line, run.output).toContain(`missing ${[...really].sort().join(', ')} —`);
    }
  });
});
