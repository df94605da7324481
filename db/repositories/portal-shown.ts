import { sql } from 'drizzle-orm';

/**
 * What the portal's tree shows of a destination's transfers (`t`, its data file `f`), for every
 * protocol: a transfer not INIT, SCHE or FETC, scheduled, not expired, its file not deleted, and
 * not held unless to its uploader (heldShownTo).
 */
export const shownAt = (now: Date, viewer: string | null) => sql`t.status not in ('INIT', 'SCHE', 'FETC')
  and t.scheduled_at <= ${now.toISOString()}::timestamptz and t.expires_at > ${now.toISOString()}::timestamptz
  and f.deleted_at is null and ${heldShownTo(viewer)}`;

/**
 * A held transfer (HOLD: a standby or temporary upload) shows only to the portal user who uploaded
 * it, `viewer` being that user's `registeredBy` (core/portal/uploads.ts); null: to no one until it
 * is released.
 */
export const heldShownTo = (viewer: string | null) =>
  viewer === null ? sql`t.status <> 'HOLD'` : sql`(t.status <> 'HOLD' or f.registered_by = ${viewer})`;
