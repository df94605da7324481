import type { MigrationConfig } from 'drizzle-orm/migrator';
import type { PgDialect, PgSession } from 'drizzle-orm/pg-core';
import type { DbHandle } from './client.ts';
import { bundledMigrations } from './migrations/bundle.generated.ts';

// drizzle's defaults, where databases migrated from the folder keep what they applied; the folder is not read.
const CONFIG: MigrationConfig = {
  migrationsFolder: 'db/migrations',
  migrationsTable: '__drizzle_migrations',
  migrationsSchema: 'drizzle',
};

/**
 * Applies the committed drizzle-kit migrations; the same SQL on PGlite and Postgres. They are part of
 * the code (db/bundle-migrations.mjs), not read from a folder a bundled function does not have; the rest
 * is what drizzle's migrators for both drivers do.
 */
export async function migrate(handle: DbHandle): Promise<void> {
  // Both drivers' databases carry these, as drizzle's own migrators rely on; its types keep them internal.
  const { dialect, session } = handle.db as unknown as { dialect: PgDialect; session: PgSession };
  await dialect.migrate(bundledMigrations, session, CONFIG);
}
