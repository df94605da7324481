import { and, asc, eq, inArray, notInArray, sql } from 'drizzle-orm';
import type { FieldType } from '../../core/metadata/model.ts';
import type { MetadataRepo } from '../../core/metadata/ports.ts';
import type { Database } from '../client.ts';
import { runPrepared } from '../prepared.ts';
import { destinations, metadataFields, metadataNoteFlags, metadataValues } from '../schema.ts';

export const metadataRepo = (db: Database): MetadataRepo => ({
  async fields() {
    const rows = await db
      .select()
      .from(metadataFields)
      .orderBy(asc(metadataFields.category), asc(metadataFields.position), asc(metadataFields.name));
    return rows.map((r) => ({ ...r, type: r.type as FieldType }));
  },
  async upsertField(definition) {
    const [existing] = await db
      .select({ id: metadataFields.id })
      .from(metadataFields)
      .where(sql`lower(${metadataFields.name}) = lower(${definition.name})`);
    if (existing) {
      await db.update(metadataFields).set(definition).where(eq(metadataFields.id, existing.id));
      return { id: existing.id, created: false };
    }
    const [row] = await db.insert(metadataFields).values(definition).returning({ id: metadataFields.id });
    return { id: row!.id, created: true };
  },
  async values(destination) {
    return runPrepared(
      db
        .select({ fieldId: metadataValues.fieldId, position: metadataValues.position, value: metadataValues.value })
        .from(metadataValues)
        .where(eq(metadataValues.destination, destination))
        .orderBy(asc(metadataValues.fieldId), asc(metadataValues.position)),
      'metadataValues',
    );
  },
  async flags(destination) {
    const rows = await runPrepared(
      db
        .select({ fieldId: metadataNoteFlags.fieldId })
        .from(metadataNoteFlags)
        .where(eq(metadataNoteFlags.destination, destination)),
      'metadataFlags',
    );
    return rows.map((r) => r.fieldId);
  },
  async replaceValues(destination, values, keepFieldIds) {
    // Concurrent replaces of one destination take turns; otherwise both delete, then both insert.
    await runPrepared(
      db.select({ name: destinations.name }).from(destinations).where(eq(destinations.name, destination)).for('update'),
      'metadataLockDestination',
    );
    const kept = keepFieldIds.length ? notInArray(metadataValues.fieldId, keepFieldIds) : undefined;
    await runPrepared(
      db.delete(metadataValues).where(and(eq(metadataValues.destination, destination), kept)),
      'metadataDeleteValues',
    );
    if (values.length)
      await runPrepared(
        db.insert(metadataValues).values(values.map((v) => ({ ...v, destination }))),
        'metadataInsertValues',
      );
  },
  async replaceFlags(destination, fieldIds) {
    await runPrepared(
      db.delete(metadataNoteFlags).where(eq(metadataNoteFlags.destination, destination)),
      'metadataDeleteFlags',
    );
    if (fieldIds.length)
      await runPrepared(
        db.insert(metadataNoteFlags).values(fieldIds.map((fieldId) => ({ destination, fieldId }))),
        'metadataInsertFlags',
      );
  },
  async seedDefault(fieldId, value, only) {
    if (only && only.length === 0) return;
    const valued = sql`select 1 from ${metadataValues} v where v.destination = ${destinations.name}`;
    await db.insert(metadataValues).select(
      db
        .select({
          destination: destinations.name,
          fieldId: sql<number>`${fieldId}`.as('field_id'),
          position: sql<number>`0`.as('position'),
          value: sql<string>`${value}`.as('value'),
        })
        .from(destinations)
        .where(
          and(
            only ? inArray(destinations.name, only) : undefined,
            sql`not exists (${valued} and v.field_id = ${fieldId})`,
          ),
        ),
    );
  },
});
