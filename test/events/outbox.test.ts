import pg from 'pg';
import type { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { dispatchBatch, startOutboxDispatcher } from '../../src/webhooks/outbox.js';
import { DELIVERY_QUEUE, type DeliveryJob } from '../../src/webhooks/queue.js';
import { startQueueWithDeliveries } from '../helpers/deliveryQueue.js';
import { createEndpoint, WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer } from '../helpers/testServer.js';

// Bounds that only tell a hang.
const HANG = 20_000;

/**
 * The webhook outbox (src/webhooks/outbox.ts): delivery intents a write commits in its own statement,
 * made pg-boss jobs by a dispatcher, each exactly once however many dispatchers race, none lost when a
 * dispatch fails. Intents are written here by SQL, as another instance's writes would be; no workers
 * run on this database, so every job stays to be counted.
 */
describe('webhook outbox: dispatched exactly once', () => {
  let db: TestDatabase;
  let boss: PgBoss;
  let sql: pg.Pool;
  const errors: Error[] = [];
  const pool = (max = 2) => {
    const p = new pg.Pool({ connectionString: db.env.DATABASE_URL, max });
    p.on('error', () => {});
    onTestFinished(() => p.end());
    return p;
  };
  /** `n` intents for events from `first`, to endpoint 7 of account 3 (neither exists: the jobs would skip them). */
  const intents = (first: number, n: number) =>
    sql.query('INSERT INTO webhook_outbox (event_id, endpoint_id, account_id) SELECT g, 7, 3 FROM generate_series($1::bigint, $2::bigint) g', [first, first + n - 1]);
  const outboxed = async () => (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_outbox')).rows[0]!.n;
  /** Delivery jobs of events `first`…, how many of each (one row per count: [[1, n]] when each has exactly one). */
  const jobCounts = async (first: number, n: number) =>
    (
      await sql.query<{ per: number; events: number }>(
        `SELECT per, count(*)::int AS events FROM (SELECT count(*)::int AS per FROM pgboss.job WHERE name = $1 AND (data->>'eventId')::bigint BETWEEN $2 AND $3 GROUP BY data->>'eventId') c GROUP BY per ORDER BY per`,
        [DELIVERY_QUEUE, first, first + n - 1],
      )
    ).rows.map((r) => [r.per, r.events]);

  beforeAll(async () => {
    db = await createTestDatabase();
    boss = await startQueueWithDeliveries({ connectionString: db.env.DATABASE_URL }, { timeoutMs: 10_000, onError: (err) => errors.push(err) });
    sql = new pg.Pool({ connectionString: db.env.DATABASE_URL, max: 3 });
  });
  afterAll(async () => {
    await sql?.end();
    await boss?.stop({ graceful: false, close: true });
    await db?.drop();
  });

  it('a batch queues one first-attempt job per intent, with the intent\'s event, endpoint and account, and empties the outbox of them', async () => {
    await intents(1000, 3);
    expect(await dispatchBatch(boss, pool(), 500)).toEqual({ jobs: 3, buckets: new Set([7]) });
    expect(await outboxed()).toBe(0);
    const { rows } = await sql.query<{ data: DeliveryJob; priority: number; group_id: string }>(
      `SELECT data, priority, group_id FROM pgboss.job WHERE name = $1 AND (data->>'eventId')::bigint BETWEEN 1000 AND 1002 ORDER BY (data->>'eventId')::bigint`,
      [DELIVERY_QUEUE],
    );
    expect(rows.map((r) => [r.data.eventId, r.data.endpointId, r.data.accountId, r.data.attempt, r.priority, r.group_id])).toEqual([
      [1000, 7, 3, 1, 7, '7'],
      [1001, 7, 3, 1, 7, '7'],
      [1002, 7, 3, 1, 7, '7'],
    ]);
    // A series of its own each.
    expect(new Set(rows.map((r) => r.data.series)).size).toBe(3);
  });

  it('rows another dispatcher holds are skipped, not waited for, and taken once it lets them go', async () => {
    await intents(2000, 30);
    const holder = await sql.connect();
    onTestFinished(() => holder.release());
    await holder.query('BEGIN');
    await holder.query('SELECT id FROM webhook_outbox ORDER BY id LIMIT 10 FOR UPDATE');
    expect((await dispatchBatch(boss, pool(), 500)).jobs).toBe(20);
    await holder.query('ROLLBACK');
    expect((await dispatchBatch(boss, pool(), 500)).jobs).toBe(10);
    expect(await jobCounts(2000, 30)).toEqual([[1, 30]]);
    expect(await outboxed()).toBe(0);
  });

  it('two dispatchers racing over 3000 intents, in batches of 50: each intent becomes exactly one job', async () => {
    await intents(10_000, 3000);
    const taken = [0, 0];
    const drain = async (i: number, p: pg.Pool) => {
      for (let n = -1; n !== 0; taken[i]! += n) n = (await dispatchBatch(boss, p, 50)).jobs;
    };
    await Promise.all([drain(0, pool()), drain(0, pool()), drain(1, pool()), drain(1, pool())]);
    expect(taken[0]! + taken[1]!).toBe(3000);
    expect(await jobCounts(10_000, 3000)).toEqual([[1, 3000]]);
    expect(await outboxed()).toBe(0);
    console.log(`outbox race: the two dispatchers took ${taken[0]} and ${taken[1]}`);
  });

  it('a dispatch whose connection dies after its DELETE leaves the intents in the outbox; the next run queues each once', async () => {
    await intents(20_000, 40);
    // pg-boss's insert waits on this lock, after the dispatch has deleted its intents.
    const blocker = await sql.connect();
    onTestFinished(() => blocker.release());
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE pgboss.job IN SHARE MODE');
    const failures: Error[] = [];
    let dispatched = 0;
    const dispatcher = startOutboxDispatcher(boss, pool(1), { pollMs: 50, dispatched: (n) => (dispatched += n), onError: (err) => failures.push(err) });
    onTestFinished(() => dispatcher.stop());
    let pid: number | undefined;
    expect(
      await waitFor(async () => {
        pid = (await sql.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%pgboss.job%'`)).rows[0]?.pid;
        return pid !== undefined;
      }, HANG, 20),
    ).toBe(true);
    // Deleted in its transaction, so other sessions still see them.
    expect(await outboxed()).toBe(40);
    await sql.query('SELECT pg_terminate_backend($1)', [pid]);
    await blocker.query('ROLLBACK');
    expect(await waitFor(() => failures.length > 0, HANG, 20)).toBe(true);
    expect(await waitFor(() => dispatched === 40, HANG, 20)).toBe(true);
    expect(failures).toHaveLength(1);
    expect(await jobCounts(20_000, 40)).toEqual([[1, 40]]);
    expect(await outboxed()).toBe(0);
  });

  it('the backstop: intents written by SQL, with no nudge, are dispatched within the poll interval', async () => {
    let dispatched = 0;
    const dispatcher = startOutboxDispatcher(boss, pool(1), { pollMs: 50, dispatched: (n) => (dispatched += n), onError: (err) => errors.push(err) });
    onTestFinished(() => dispatcher.stop());
    await intents(30_000, 1200);
    // More than two batches of 500: one run takes them all, batch after batch.
    expect(await waitFor(() => dispatched === 1200, HANG, 20)).toBe(true);
    expect(await jobCounts(30_000, 1200)).toEqual([[1, 1200]]);
    expect(await outboxed()).toBe(0);
  });

  it('a nudge runs it at once: with a poll of an hour, written() alone dispatches; stop() then ends it', async () => {
    let dispatched = 0;
    const dispatcher = startOutboxDispatcher(boss, pool(1), { pollMs: 3_600_000, dispatched: (n) => (dispatched += n), onError: (err) => errors.push(err) });
    // Its first run, at start, may or may not find this one; after it, only a nudge runs it before the hour is out.
    await intents(40_000, 1);
    dispatcher.written();
    expect(await waitFor(() => dispatched === 1, HANG, 10)).toBe(true);
    await intents(40_001, 4);
    for (let i = 0; i < 10; i++) dispatcher.written();
    expect(await waitFor(() => dispatched === 5, HANG, 10)).toBe(true);
    await dispatcher.stop();
    await intents(40_005, 1);
    dispatcher.written();
    expect(await outboxed()).toBe(1);
    expect(await jobCounts(40_000, 5)).toEqual([[1, 5]]);
    await sql.query('DELETE FROM webhook_outbox');
  });
});

describe('webhook outbox: the API\'s writes', () => {
  it('each write with a subscribed endpoint queues one job per endpoint through the outbox, which is empty after; an unsubscribed type queues nothing', async () => {
    // No workers: the jobs stay to be counted.
    const server = await startTestServer({ ...WEBHOOK_TEST_ENV, WEBHOOK_CONCURRENCY: '0' });
    onTestFinished(() => server.close());
    const key = await server.createKey('business');
    const all = await createEndpoint(server, key, 'http://127.0.0.1:9/all');
    const created = await createEndpoint(server, key, 'http://127.0.0.1:9/created', ['pet.created']);
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push((await server.request('/v1/pets', { key, body: { name: `Outbox ${i}`, categoryId: 1 } })).body.id);
    for (const id of ids.slice(0, 5)) expect((await server.request(`/v1/pets/${id}`, { key, method: 'PATCH', body: { name: 'Renamed' } })).status).toBe(200);
    const pool = server.app.database.pool;
    expect(await waitFor(async () => (await pool.query('SELECT 1 FROM webhook_outbox')).rowCount === 0, HANG, 20)).toBe(true);
    const { rows } = await pool.query<{ endpoint: number; type: string; jobs: number; events: number }>(
      `SELECT (j.data->>'endpointId')::int AS endpoint, e.type, count(*)::int AS jobs, count(DISTINCT e.id)::int AS events
         FROM pgboss.job j JOIN events e ON e.id = (j.data->>'eventId')::bigint
        WHERE j.name = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [DELIVERY_QUEUE],
    );
    expect(rows).toEqual([
      { endpoint: all.id, type: 'pet.created', jobs: 20, events: 20 },
      { endpoint: all.id, type: 'pet.updated', jobs: 5, events: 5 },
      { endpoint: created.id, type: 'pet.created', jobs: 20, events: 20 },
    ]);
    expect(await server.app.metricsRegistry.getSingleMetricAsString('animal_store_webhook_outbox_dispatched_total')).toMatch(/ 45$/m);
  });
});
