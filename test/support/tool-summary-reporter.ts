import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Reporter, TestCase, TestModule, TestSuite } from 'vitest/node';
import { installCommand, RECORDS_ENV } from './tools.ts';

/**
 * One line at the end of a run naming the tools whose absence skipped tests, and the command that
 * installs them: `skipped N tests: missing rclone, sshd — install with: apt-get install -y …`.
 * Under CI, where every tool is installed, such a skip fails the run.
 *
 * The test processes record what they found missing in files under a directory of this run
 * (tools.ts); a skipped test is counted for the tools tagged on it or on a suite above it
 * (`needs(…)`), or, in a file that recorded a missing tool without tagging, for that file's tools.
 */
export default class ToolSummaryReporter implements Reporter {
  private dir = '';

  onInit() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-test-tools-'));
    // Inherited by the test processes, started after this.
    process.env[RECORDS_ENV] = this.dir;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
    const recorded = this.records();
    fs.rmSync(this.dir, { recursive: true, force: true });
    const tools = new Set<string>();
    let skipped = 0;
    for (const module of testModules) {
      const fileTools = recorded.get(module.moduleId);
      const tests = [...module.children.allTests('skipped')].map((test) => taggedTools(test));
      // Where a file tags its tests, an untagged skip there is for another reason (no Postgres, …).
      const anyTagged = tests.some((tagged) => tagged.length > 0);
      for (const tagged of tests) {
        const because = tagged.length > 0 || anyTagged ? tagged : [...(fileTools ?? [])];
        if (because.length === 0) continue;
        skipped++;
        for (const tool of because) tools.add(tool);
      }
      // A file whose tests never ran at all (e.g. it skipped in a hook) still names its tools.
      for (const tool of fileTools ?? []) tools.add(tool);
    }
    if (tools.size === 0) return;
    const names = [...tools].sort();
    const line = `skipped ${skipped} test${skipped === 1 ? '' : 's'}: missing ${names.join(', ')} — install with: ${installCommand(names)}`;
    if (process.env.CI) {
      process.stdout.write(`\n${line}\nCI runs every test: a test skipped for a missing tool fails the run.\n`);
      process.exitCode = 1;
    } else {
      process.stdout.write(`\n${line}\n`);
    }
  }

  /** The missing tools each test file recorded. */
  private records(): Map<string, Set<string>> {
    const byFile = new Map<string, Set<string>>();
    let files: string[] = [];
    try {
      files = fs.readdirSync(this.dir);
    } catch {}
    for (const name of files) {
      for (const line of fs.readFileSync(path.join(this.dir, name), 'utf8').split('\n')) {
        if (!line) continue;
        const { file, tools } = JSON.parse(line) as { file: string | null; tools: string[] };
        const key = file ?? '';
        const set = byFile.get(key) ?? new Set<string>();
        for (const tool of tools) set.add(tool);
        byFile.set(key, set);
      }
    }
    return byFile;
  }
}

/** The tools tagged on a test or the nearest suite above it that has any. */
function taggedTools(test: TestCase): string[] {
  let task: TestCase | TestSuite | TestModule = test;
  while (task.type !== 'module') {
    const tools = task.meta().missingTools;
    if (tools && tools.length > 0) return tools;
    task = task.parent;
  }
  return [];
}
