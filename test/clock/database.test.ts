import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabaseClock } from '../../core/common/database-clock.ts';
import { type DbHandle, rowsOf } from '../../db/client.ts';
import { readDatabaseClock } from '../../db/clock.ts';
import { freshDatabase } from '../support/database.ts';

/** The database clock measured against the suite's database (PGlite, or Postgres with TEST_DATABASE_URL). */
let handle: DbHandle;
beforeAll(async () => {
  handle = await freshDatabase();
});
afterAll(async () => {
  await handle.close();
});

const TEN_MINUTES = 10 * 60_000;
/** How far the clock may be from the database's: half a round trip at most, on a busy machine. */
const TOLERANCE_MS = 500;

async function clockTimestamp() {
  const rows = await handle.db.execute(sql`select clock_timestamp() as at`);
  return new Date(rowsOf<{ at: string | Date }>(rows)[0]!.at).getTime();
}

describe("a database clock on the suite's database", () => {
  it("agrees with the database's clock_timestamp() on a machine whose own clocks are ten minutes ahead", async () => {
    const clock = createDatabaseClock({
      wallNow: () => Date.now() + TEN_MINUTES,
      monotonicNow: () => performance.now() + TEN_MINUTES,
    });
    // Before it is measured, it is the machine's wall clock: ten minutes off.
    expect(Math.abs(clock.now().getTime() - (await clockTimestamp()) - TEN_MINUTES)).toBeLessThan(TOLERANCE_MS);

    await clock.measure(() => readDatabaseClock(handle.db));
    for (let i = 0; i < 5; i++) {
      const before = clock.now().getTime();
      const database = await clockTimestamp();
      const after = clock.now().getTime();
      expect(database).toBeGreaterThanOrEqual(before - TOLERANCE_MS);
      expect(database).toBeLessThanOrEqual(after + TOLERANCE_MS);
    }
  });

  it("reads the database's clock as it runs on, not the start of a transaction", async () => {
    await handle.db.transaction(async (tx) => {
      const first = await readDatabaseClock(tx);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await readDatabaseClock(tx);
      expect(second.getTime() - first.getTime()).toBeGreaterThanOrEqual(40);
    });
  });
});
