import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';

export interface TestDatabase {
  /** Settings for loadConfig: DATABASE_URL or DATA_DIR. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

let counter = 0;

/** A fresh, migrated database of its own for one test file: Postgres if DATABASE_URL is set, else PGlite. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject('template');
  if (template.kind === 'postgres') {
    const name = `as_${template.runId}_${process.pid}_${counter++}`;
    const admin = new pg.Client({ connectionString: template.adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template.name}`);
    await admin.end();
    const url = new URL(template.adminUrl);
    url.pathname = `/${name}`;
    return {
      env: { DATABASE_URL: url.toString() },
      async drop() {
        const c = new pg.Client({ connectionString: template.adminUrl });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), 'as-db-'));
  await cp(template.dir, dir, { recursive: true });
  return { env: { DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) };
}

export interface ServerDatabase extends TestDatabase {
  name: string;
  /** A connection to the server's admin database, for a test to break things with. */
  admin: pg.Client;
}

/**
 * A new, empty database on a real Postgres server, whichever backend the rest of the suite
 * uses (DATABASE_URL if set, else TEST_POSTGRES_URL or the local server): for tests that
 * need what only a server has (faults, several processes on one database).
 */
export async function createServerDatabase(label: string): Promise<ServerDatabase> {
  const adminUrl = process.env.DATABASE_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const name = `as_${label}_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    admin,
    env: { DATABASE_URL: url.toString() },
    async drop() {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => {});
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
