import { describe, expect, it } from 'vitest';
import { QuotaLedger } from '../../core/portal/quota-ledger.ts';

/** The decision behind the portal's quotas as bytes move: what each of a user's transfers may still move. */
const quota = { maxBytes: 1000, periodMs: 60_000 };

describe('QuotaLedger', () => {
  it('shares what is left between the downloads running, and gives the last bytes to whoever asks first', () => {
    const ledger = new QuotaLedger();
    const a = ledger.open('u', quota, 100)!;
    const b = ledger.open('u', quota, 100)!;
    expect(a.allow(600)).toBe(600);
    expect(b.left()).toBe(300);
    expect(b.allow(600)).toBe(300);
    expect(a.left()).toBe(0);
    expect(a.allow(1)).toBe(0);
    expect(b.allow(1)).toBe(0);
    // Another user's quota is its own.
    expect(ledger.open('v', quota, 0)!.allow(1000)).toBe(1000);
  });

  it('counts what an ended download stored once, and what another process stored too', () => {
    const ledger = new QuotaLedger();
    const a = ledger.open('u', quota, 0)!;
    const b = ledger.open('u', quota, 0)!;
    expect(a.allow(400)).toBe(400);
    a.close();
    // The store now holds a's 400, and 100 of another server: 500 in all, not 400 twice.
    const c = ledger.open('u', quota, 500)!;
    expect(b.allow(1000)).toBe(500);
    expect(c.allow(1)).toBe(0);
  });

  it('refuses a download once the quota is spent, and forgets a user once its downloads ended', () => {
    const ledger = new QuotaLedger();
    expect(ledger.open('u', quota, 1000)).toBeNull();
    const a = ledger.open('u', quota, 0)!;
    expect(a.allow(1000)).toBe(1000);
    expect(ledger.open('u', quota, 0)).toBeNull();
    a.close();
    expect(a.allow(1)).toBe(0);
    // The period rolled on: the store's traffic is all there is once nothing runs.
    expect(ledger.open('u', quota, 0)!.allow(1000)).toBe(1000);
  });
});
