import os from 'node:os';

/**
 * One factor for the tests' deadlines (test and hook timeouts, waits for a server or an event), so
 * that a busy or small machine is given the time it needs rather than failing a test: a deadline
 * says how long is too long, never how fast the code must be. ECPDS_TEST_TIME_SCALE sets it; by
 * default it grows as the machine has fewer than 4 cores or more work than cores when the run starts.
 */
function defaultScale(): number {
  const cores = os.availableParallelism();
  const load = os.loadavg()[0] ?? 0;
  return Math.min(8, Math.max(1, 4 / cores, load / cores));
}

function scaleFromEnv(): number {
  const value = process.env.ECPDS_TEST_TIME_SCALE;
  if (value === undefined || value === '') return defaultScale();
  const scale = Number(value);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`ECPDS_TEST_TIME_SCALE must be a positive number, not ${JSON.stringify(value)}`);
  }
  return scale;
}

export const TIME_SCALE = scaleFromEnv();

/** A deadline of `ms` on a machine of the reference size, on this one. */
export const scaled = (ms: number) => Math.round(ms * TIME_SCALE);
