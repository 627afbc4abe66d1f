import { readdir, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createDatabase, dropDatabase } from '../helpers/databases.js';
import { createPool, openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { migrationsDir } from '../../src/paths.js';
import { postgresServerUrl } from '../helpers/services.js';
import { createTestDatabase, databaseName } from '../helpers/testDatabase.js';
import { scratchDir } from '../helpers/scratchDir.js';

const noop = () => {};
const allMigrations = async () => (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();

describe('migrations', () => {
  it('apply each file exactly once when 8 instances migrate one fresh database at the same time', async () => {
    const adminUrl = postgresServerUrl();
    const name = databaseName('migrate');
    const url = await createDatabase(adminUrl, name);
    const pools = Array.from({ length: 8 }, () => createPool({ poolMax: 1, databaseUrl: url, connection: { connectionString: url } }).on('error', noop));
    try {
      // Every pool connected first, so that the eight runs start together and race for the lock.
      await Promise.all(pools.map(async (pool) => (await pool.connect()).release()));
      const applied = await Promise.all(pools.map((pool) => migrate(pool)));

      const files = await allMigrations();
      expect(applied.filter((run) => run.length > 0), 'one run applies everything, the others find it done').toEqual([files]);
      const { rows } = await pools[0]!.query('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(files);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await dropDatabase(adminUrl, name);
    }
  });

  it('apply nothing again when the embedded PostgreSQL is started a second time, and keep its data', async () => {
    const dir = await scratchDir('as-migrate-');
    try {
      const first = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 2, onIdleError: noop });
      await first.pool.query(`INSERT INTO pets (name, category_id) VALUES ('kept', 1)`);
      await first.close();
      const second = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 2, onIdleError: noop });
      try {
        expect(await migrate(second.pool)).toEqual([]);
        const { rows } = await second.pool.query('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r) => r.version)).toEqual(await allMigrations());
        expect((await second.pool.query('SELECT name FROM pets')).rows).toEqual([{ name: 'kept' }]);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('returns int8 columns as exact numbers', async () => {
    const own = await createTestDatabase();
    const db = await openDatabase({ databaseUrl: own.env.DATABASE_URL, dataDir: '', poolMax: 1, onIdleError: noop });
    try {
      const { rows } = await db.pool.query('SELECT 9007199254740991::bigint AS big, count(*) AS n FROM (VALUES (1)) v');
      expect(rows[0]).toEqual({ big: 9007199254740991, n: 1 });
      await expect(db.pool.query('SELECT 9007199254740993::bigint AS big')).rejects.toThrow(/exceeds 2\^53-1/);
    } finally {
      await db.close();
      await own.drop();
    }
  });
});
