import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrationsDir } from '../../src/paths.js';

const adminUrl = process.env.DATABASE_URL;
const noop = () => {};
const allMigrations = async () => (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();

describe('migrations', () => {
  it('apply once, also when several instances start at the same time', async () => {
    if (adminUrl) {
      const name = `as_migrate_${process.pid}`;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name}`);
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(adminUrl);
      url.pathname = `/${name}`;
      try {
        // Three instances race on an empty database; the advisory lock makes it safe.
        const dbs = await Promise.all(
          [1, 2, 3].map(() => openDatabase({ databaseUrl: url.toString(), dataDir: '', poolMax: 2, onIdleError: noop })),
        );
        const { rows } = await dbs[0]!.pool.query('SELECT version FROM schema_migrations');
        expect(rows.map((r) => r.version).sort()).toEqual(await allMigrations());
        await Promise.all(dbs.map((d) => d.close()));
      } finally {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
    } else {
      // Embedded: one process owns the store; opening it again must not re-apply anything.
      const dir = await mkdtemp(path.join(os.tmpdir(), 'as-migrate-'));
      try {
        const first = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 2, onIdleError: noop });
        await first.pool.query(`INSERT INTO pets (name, category_id) VALUES ('kept', 1)`);
        await first.close();
        const second = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 2, onIdleError: noop });
        const { rows } = await second.pool.query('SELECT version FROM schema_migrations');
        expect(rows.map((r) => r.version).sort()).toEqual(await allMigrations());
        expect((await second.pool.query('SELECT name FROM pets')).rows).toEqual([{ name: 'kept' }]);
        await second.close();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });

  it('returns int8 columns as exact numbers', async () => {
    const db = await openDatabase({
      databaseUrl: adminUrl,
      dataDir: await mkdtemp(path.join(os.tmpdir(), 'as-int8-')),
      poolMax: 1,
      onIdleError: noop,
    });
    try {
      const { rows } = await db.pool.query('SELECT 9007199254740991::bigint AS big, count(*) AS n FROM (VALUES (1)) v');
      expect(rows[0]).toEqual({ big: 9007199254740991, n: 1 });
      await expect(db.pool.query('SELECT 9007199254740993::bigint AS big')).rejects.toThrow(/exceeds 2\^53-1/);
    } finally {
      await db.close();
    }
  });
});
