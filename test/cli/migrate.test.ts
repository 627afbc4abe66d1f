import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runScript } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { migrationsDir } from '../../src/paths.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

/** npm run migrate, as its own process, on the database of `env`. */
const migrate = (env: Record<string, string>) => runScript('scripts/migrate.ts', [], env);
const allMigrations = async () => (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();

describe('npm run migrate', () => {
  const databases: ServerDatabase[] = [];
  afterAll(async () => {
    for (const db of databases) await db.drop();
  });

  it('on a new embedded store: lists every migration it applied; run again: up to date, nothing applied', async () => {
    const dir = await scratchDir('as-migrate-cli-');
    const env = { DATA_DIR: path.join(dir, 'data') };
    const first = await migrate(env);
    expect(first.code, first.stderr).toBe(0);
    const files = await allMigrations();
    expect(first.stdout).toBe(`Applied ${files.length} migration(s) to the embedded store:\n${files.map((f) => `  ${f}\n`).join('')}`);
    const again = await migrate(env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe('Database is up to date (the embedded store): no migration was pending.\n');
  });

  it('on a new Postgres database: the same, naming DATABASE_URL', async () => {
    const db = await createServerDatabase('migratecli');
    databases.push(db);
    const first = await migrate(db.env);
    expect(first.code, first.stderr).toBe(0);
    const files = await allMigrations();
    expect(first.stdout).toBe(`Applied ${files.length} migration(s) to DATABASE_URL:\n${files.map((f) => `  ${f}\n`).join('')}`);
    expect((await migrate(db.env)).stdout).toBe('Database is up to date (DATABASE_URL): no migration was pending.\n');
  });

  it('a database it cannot reach: one sentence naming DATABASE_URL, exit 1', async () => {
    const res = await migrate({ DATABASE_URL: 'postgres://postgres@no-such-host.invalid/animals' });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toMatch(/^DATABASE_URL names the host "no-such-host\.invalid", which this machine cannot resolve\./);
    expect(res.stderr).not.toMatch(/^\s+at /m);
  });
});
