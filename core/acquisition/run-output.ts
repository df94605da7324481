import type { CacheCount, CacheTotal } from './ports.ts';

/** The output keeps this many entry lines; the rest are counted. */
const MOST_OUTPUT_LINES = 5_000;

/** The run's output: a line per listing and per entry, bounded; the entries past the bound are counted. */
export class RunOutput {
  private readonly lines: string[] = [];
  private left = 0;
  /** Entries by how they ended (`selected`, `not_selected`; a message's `taken`, `invalid`, …), for /metrics. */
  readonly counts: Record<string, number> = {};
  private readonly caches = new Map<string, CacheTotal>();
  constructor(private readonly clock: () => Date) {}

  line(text: string) {
    this.lines.push(`${this.clock().toISOString()} ${text}`);
  }

  entry(name: string, outcome: string, kind: string) {
    this.counts[kind] = (this.counts[kind] ?? 0) + 1;
    if (this.lines.length >= MOST_OUTPUT_LINES) this.left++;
    else this.lines.push(`  ${name}: ${outcome}`);
  }

  /** Adds what a Global Cache did with a message's data to its centre's counts. */
  cache(counts: CacheCount[]) {
    for (const { reportBy, centre, outcome, bytes, at } of counts) {
      const key = `${reportBy}\n${centre}`;
      const total = this.caches.get(key) ?? {
        reportBy,
        centre,
        downloaded: 0,
        bytes: 0,
        errors: 0,
        integrityFailed: 0,
        noCache: 0,
        lastDownloadAt: null,
        serverUp: null,
      };
      this.caches.set(key, total);
      if (outcome === 'downloaded') {
        total.downloaded++;
        total.lastDownloadAt = at;
        total.serverUp = true;
      }
      if (outcome === 'downloaded' || outcome === 'inline') total.bytes += bytes;
      if (outcome === 'error') {
        total.errors++;
        total.serverUp = false;
      }
      if (outcome === 'integrity_failed') total.integrityFailed++;
      if (outcome === 'no_cache') total.noCache++;
    }
  }

  cacheTotals() {
    return [...this.caches.values()];
  }

  text() {
    const rest = this.left > 0 ? [`  … ${this.left} more entries`] : [];
    return [...this.lines, ...rest].join('\n');
  }
}
