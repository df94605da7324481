// Preloaded into a child process (NODE_OPTIONS=--import) to set its wall clock TEST_CLOCK_SKEW_MS
// off, as on a machine whose clock is wrong: Date moves, the monotonic clock (performance.now) and
// the database's clock do not.
const skewMs = Number(process.env.TEST_CLOCK_SKEW_MS ?? 0);
const SystemDate = Date;

class SkewedDate extends SystemDate {
  constructor(...args) {
    if (args.length === 0) super(SystemDate.now() + skewMs);
    else super(...args);
  }

  static now() {
    return SystemDate.now() + skewMs;
  }
}

globalThis.Date = SkewedDate;
