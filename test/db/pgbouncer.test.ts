import { readdir } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgBouncer, type PgBouncer } from '../helpers/pgbouncer.js';
import { hashApiKey } from '../../src/auth/apiKey.js';
import { openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createPool } from '../../src/db/database.js';
import { withTransaction } from '../../src/db/transaction.js';
import { migrationsDir } from '../../src/paths.js';
import type { ApiResponse } from '../helpers/http.js';
import { withoutPgBouncer } from '../helpers/services.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

/*
 * The API's core through a PgBouncer of its own in transaction pooling mode, 4 server
 * sessions shared by every pool: session state (SET, session advisory locks, named
 * statements) would leak or break here. The timeouts come from the role, as the README says.
 */
const TIMEOUTS = { statementTimeoutMs: 2000, lockTimeoutMs: 1000 };
const ROLE_SETTINGS = { statement_timeout: 2000, lock_timeout: 1000, idle_in_transaction_session_timeout: 4000 };
const noop = () => {};

let db: ServerDatabase;
let bouncer: PgBouncer;
const counts = { creates201: 0, errors: 0, blocked503: 0, maxSessions: 0 };

/** Server sessions (backends) on the test database: PgBouncer's, plus any direct connection a test opens. */
async function serverSessions(): Promise<number> {
  const { rows } = await db.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [db.name]);
  return rows[0]!.n;
}

/** Samples serverSessions() while `work` runs; returns its result and the most sessions seen. */
async function sampled<T>(work: () => Promise<T>): Promise<{ result: T; maxSessions: number }> {
  let maxSessions = 0;
  const sampler = setInterval(() => void serverSessions().then((n) => (maxSessions = Math.max(maxSessions, n)), noop), 20);
  try {
    return { result: await work(), maxSessions: Math.max(maxSessions, await serverSessions()) };
  } finally {
    clearInterval(sampler);
  }
}

const skip = withoutPgBouncer();

beforeAll(async () => {
  if (skip) return;
  db = await createServerDatabase('pgbouncer');
  // Before PgBouncer opens any server session: a session takes the role's settings when it starts.
  for (const [name, ms] of Object.entries(ROLE_SETTINGS)) {
    await db.admin.query(`ALTER ROLE CURRENT_USER IN DATABASE ${db.admin.escapeIdentifier(db.name)} SET ${name} = ${ms}`);
  }
  bouncer = await startPgBouncer(db.env.DATABASE_URL!, { poolSize: 4 });
});
afterAll(async () => {
  await bouncer?.stop();
  await db?.drop(); // its role settings go with it
});

describe.skipIf(skip)('through PgBouncer in transaction pooling mode', () => {
  it('refuses to start on timeouts that do not hold: startup parameters refused, role settings that differ', async () => {
    const open = (opts: { pooling?: 'transaction'; statementTimeoutMs: number }) =>
      openDatabase({
        databaseUrl: bouncer.url,
        dataDir: '',
        poolMax: 1,
        onIdleError: noop,
        serverTimeouts: { statementTimeoutMs: opts.statementTimeoutMs, lockTimeoutMs: TIMEOUTS.lockTimeoutMs },
        pooling: opts.pooling,
      });
    await expect(open({ statementTimeoutMs: 2000 })).rejects.toThrow(/unsupported startup parameter: statement_timeout/);
    await expect(open({ pooling: 'transaction', statementTimeoutMs: 3000 })).rejects.toThrow(
      /statement_timeout = 2000 \(wanted 3000\).*ALTER ROLE "[^"]+" IN DATABASE "[^"]+" SET statement_timeout = 3000;/,
    );
  });

  it('applies each migration exactly once when 8 pools migrate the fresh database at the same time', async () => {
    const pools = Array.from({ length: 8 }, () => createPool({ poolMax: 1, databaseUrl: bouncer.url, connection: { connectionString: bouncer.url } }).on('error', noop));
    try {
      await Promise.all(pools.map(async (pool) => (await pool.connect()).release()));
      const { result: applied, maxSessions } = await sampled(() => Promise.all(pools.map((pool) => migrate(pool))));

      const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();
      expect(applied.filter((run) => run.length > 0), 'one run applies everything, the others find it done').toEqual([files]);
      const { rows } = await pools[0]!.query('SELECT version FROM schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(files);
      expect(maxSessions, '8 migrators on at most 4 server sessions').toBeLessThanOrEqual(bouncer.poolSize);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  describe('the API', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer(
        {
          DATABASE_POOLING: 'transaction',
          DB_POOL_MAX: '10',
          DB_STATEMENT_TIMEOUT_MS: String(TIMEOUTS.statementTimeoutMs),
          DB_LOCK_TIMEOUT_MS: String(TIMEOUTS.lockTimeoutMs),
        },
        { db: { env: { DATABASE_URL: bouncer.url }, drop: async () => {} } },
      );
    });
    afterAll(() => server?.close());

    const created: number[] = [];

    it('creates 40 pets at once (30 plain, 10 with keys) on a pool of 10 sharing 4 server sessions', async () => {
      const { result, maxSessions } = await sampled(() =>
        Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            answered(
              server.api.POST('/pets', {
                body: { name: `bounced ${i}`, categoryId: 1 + (i % 3) },
                params: { header: i % 4 === 0 ? { 'Idempotency-Key': `burst-${i}` } : {} },
              }),
            ),
          ),
        ),
      );
      counts.creates201 += result.filter((r) => r.status === 201).length;
      counts.errors += result.filter((r) => r.status !== 201).length;
      counts.maxSessions = Math.max(counts.maxSessions, maxSessions);
      expect(result.map((r) => r.status)).toEqual(Array(40).fill(201));
      created.push(...result.map((r) => r.body.id!));
      expect(new Set(created).size).toBe(40);
      expect(maxSessions).toBeLessThanOrEqual(bouncer.poolSize);
    });

    it('replays an idempotent create for the same key and body, and answers 422 to another body', async () => {
      const post = (name: string) => server.api.POST('/pets', { body: { name, categoryId: 9 }, params: { header: { 'Idempotency-Key': 'bounce-1' } } });
      const first = await post('Rex');
      const retry = await post('Rex');
      const other = await post('Max');
      expect(first.response.status).toBe(201);
      expect(first.response.headers.get('idempotent-replayed')).toBeNull();
      expect(retry.response.status).toBe(201);
      expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.data).toEqual(first.data);
      expect(other.response.status).toBe(422);
      expect(other.error?.code).toBe('idempotency_key_reused');
      counts.creates201 += 1;
      created.push(first.data!.id);
      expect(await server.petCount()).toBe(41);
    });

    it('pages through every pet by cursor links, exactly once each, and gets one', async () => {
      const pages: number[][] = [];
      let url: string | undefined = '/v1/pets?limit=7';
      while (url) {
        const res: ApiResponse<{ id: number }[]> = await server.request(url);
        expect(res.status).toBe(200);
        pages.push(res.body.map((p) => p.id));
        url = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
      }
      expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 7, 7, 6]);
      expect(pages.flat()).toEqual([...created].sort((a, b) => a - b));

      const { data, response } = await server.api.GET('/pets/{petId}', { params: { path: { petId: created[0]! } } });
      expect(response.status).toBe(200);
      expect(data).toEqual({ id: created[0], name: 'bounced 0', categoryId: 1, status: 'available' });
    });

    it('creates, verifies and revokes API keys', async () => {
      const { accountId, key: created } = await server.app.accounts.createAccount({ plan: 'pro', name: 'bounced' });
      const key = created.secret;
      const ok = await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }));
      expect(ok.status).toBe(200);
      expect(await server.app.accounts.authenticate(hashApiKey(key))).toEqual({
        id: created.id,
        accountId,
        plan: 'pro',
        perMinute: null,
        perDay: null,
        maxOpenOrders: null,
        scopes: created.scopes,
        expiresAt: null,
      });
      expect(await server.app.accounts.revoke({ id: created.id })).toBe(created.id);
      expect(await server.app.accounts.authenticate(hashApiKey(key))).toBeUndefined();
      const unknown = await answered(server.api.GET('/pets', { headers: { authorization: `Bearer ${key.slice(0, -4)}zzzz` } }));
      expect(unknown.status).toBe(401);
    });

    it('runs every transaction with the role timeouts: none leaked from the migrations SET LOCAL', async () => {
      const rows = await Promise.all(
        Array.from({ length: 10 }, () =>
          withTransaction(server.app.database.pool, async (client) => {
            const show = async (name: string) => (await client.query(`SHOW ${name}`)).rows[0]![name];
            return { statement: await show('statement_timeout'), lock: await show('lock_timeout'), idle: await show('idle_in_transaction_session_timeout') };
          }),
        ),
      );
      expect(rows).toEqual(Array(10).fill({ statement: '2s', lock: '1s', idle: '4s' }));

      // Cancelled by the server (57014) after 2 s, not by the client's own timeout (7 s).
      const started = Date.now();
      await expect(server.app.database.pool.query('SELECT pg_sleep(10)')).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(5000);
    });

    it('answers 503 to creates blocked by a lock held elsewhere, within 15 s, storing nothing', async () => {
      const before = await server.petCount();
      const locker = new pg.Client({ connectionString: db.env.DATABASE_URL });
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
        const started = Date.now();
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            answered(
              server.api.POST('/pets', {
                body: { name: `blocked ${i}`, categoryId: 1 },
                params: { header: i % 3 === 0 ? { 'Idempotency-Key': `blocked-${i}` } : {} },
              }),
            ),
          ),
        );
        const elapsed = Date.now() - started;
        await locker.query('ROLLBACK');
        counts.blocked503 = answers.filter((r) => r.status === 503).length;
        expect(answers.map((r) => r.status)).toEqual(Array(12).fill(503));
        expect(elapsed).toBeLessThan(15_000);
      } finally {
        await locker.end();
      }
      expect(await server.petCount()).toBe(before);
      const after = await answered(server.api.POST('/pets', { body: { name: 'after the lock', categoryId: 1 } }));
      expect(after.status).toBe(201);

      console.log(
        `pgbouncer: ${counts.creates201} creates 201, ${counts.errors} errors, pages exact, ` +
          `${counts.blocked503}/12 blocked creates 503, at most ${counts.maxSessions} server sessions for a pool of 10`,
      );
    });
  });
});
