import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { openPostgres } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';
import { openPglite } from '../../db/pglite.ts';

/**
 * Vitest global setup: migrates one database before any test file runs, so each file's
 * `freshDatabase()` copies it instead of initialising and migrating its own. On PGlite the
 * copy is a data-directory tarball (initdb is most of a fresh PGlite's start-up); on Postgres
 * it is a template database for `CREATE DATABASE … TEMPLATE`.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of a tarball of a migrated PGlite data directory. */
    pgliteTemplate?: string;
    /** A migrated database on the server of TEST_DATABASE_URL: its name and that server's address. */
    postgresTemplate?: { name: string; server: string };
  }
}

export default async function setup(project: TestProject) {
  const url = process.env.TEST_DATABASE_URL;
  return url ? postgresTemplate(project, url) : pgliteTemplate(project);
}

async function pgliteTemplate(project: TestProject) {
  const handle = await openPglite();
  await migrate(handle);
  const client = (handle.db as unknown as { $client: { dumpDataDir(c: 'none'): Promise<Blob> } }).$client;
  const tarball = await client.dumpDataDir('none');
  await handle.close();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecpds-template-'));
  const file = path.join(dir, 'pgdata.tar');
  fs.writeFileSync(file, Buffer.from(await tarball.arrayBuffer()));
  project.provide('pgliteTemplate', file);
  return () => fs.rmSync(dir, { recursive: true, force: true });
}

async function postgresTemplate(project: TestProject, url: string) {
  const { default: postgres } = await import('postgres');
  const name = `ecpds_template_${Date.now().toString(36)}_${process.pid}`;
  const admin = postgres(url, { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database "${name}"`);
  const target = new URL(url);
  target.pathname = `/${name}`;
  // Closed before any copy: Postgres copies a template only while nobody is connected to it.
  const handle = openPostgres(target.toString(), { max: 1 });
  await migrate(handle);
  await handle.close();
  project.provide('postgresTemplate', { name, server: serverOf(url) });
  return async () => {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end();
  };
}

/** host:port of a Postgres URL: a template serves only databases created on the same server. */
export const serverOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || '5432'}`;
};
