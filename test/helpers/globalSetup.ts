import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/database.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Postgres: a migrated template database to clone per test file. PGlite: a migrated data dir to copy. */
    template: { kind: 'postgres'; adminUrl: string; name: string; runId: string } | { kind: 'embedded'; dir: string };
  }
}

/** Migrates one template per run, so each test file starts from a copy in well under a second. */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.DATABASE_URL;
  if (adminUrl) {
    const runId = String(process.pid);
    const name = `as_tpl_${runId}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const db = await openDatabase({ databaseUrl: url.toString(), dataDir: '', poolMax: 1, onIdleError: () => {} });
    await db.close();
    project.provide('template', { kind: 'postgres', adminUrl, name, runId });
    return async () => {
      // Drop the template and every per-file clone of this run.
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2`,
        [name, `as\\_${runId}\\_%`],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
      await admin.end();
    };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'as-tpl-'));
  const db = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1, onIdleError: () => {} });
  await db.close();
  project.provide('template', { kind: 'embedded', dir });
  return () => rm(dir, { recursive: true, force: true });
}
