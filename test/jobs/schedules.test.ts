import type { PgBoss } from 'pg-boss';
import { TestClock } from 'pg-boss';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQueueWithDeliveries } from '../helpers/deliveryQueue.js';
import { startSchedules, type Schedule } from '../../src/jobs/schedules.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/**
 * One scheduler for every instance: two pg-boss instances, each running the scheduler and a worker
 * per schedule (as every service instance does), on one database. pg-boss's TestClock drives both:
 * its ticks fire their cron passes, the forwarding worker and the workers' polls, and Postgres reads
 * the same time (pg-boss's job_now()), so no test waits. What is counted: the jobs each schedule's
 * queue holds (pgboss.job) and the sweeps run, which must both grow by exactly one per occurrence,
 * however many instances run. The schedules here are the service's three, with counting sweeps:
 * what each sweep does is tested on its own (test/orders/expiry.test.ts, test/events/retention.test.ts, test/idempotency/retention.test.ts).
 */
const HOUR = 3_600_000;
const MINUTE = 60_000;
let db: TestDatabase;
let pool: pg.Pool;
let clock: TestClock;
let bosses: PgBoss[];
const runs: Record<string, number> = {};
const errors: Error[] = [];

const schedules: Schedule[] = [
  { queue: 'order-expiry', cron: '* * * * *' },
  { queue: 'event-retention', cron: '0 * * * *' },
  { queue: 'idempotency-key-expiry', cron: '0 * * * *' },
].map((s) => ({ ...s, run: async () => void (runs[s.queue] = (runs[s.queue] ?? 0) + 1) }));

const jobs = async () => {
  const { rows } = await pool.query<{ name: string; n: number }>(`SELECT name, count(*)::int AS n FROM pgboss.job WHERE name = ANY ($1) GROUP BY name`, [schedules.map((s) => s.queue)]);
  return Object.fromEntries(schedules.map((s) => [s.queue, rows.find((r) => r.name === s.queue)?.n ?? 0]));
};
const counts = async () => ({ jobs: await jobs(), runs: Object.fromEntries(schedules.map((s) => [s.queue, runs[s.queue] ?? 0])) });
/** Adds `by` to each queue's count. */
const plus = (before: Record<string, number>, by: Record<string, number>) => Object.fromEntries(Object.entries(before).map(([q, n]) => [q, n + (by[q] ?? 0)]));

beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.env.DATABASE_URL, max: 2 });
  // 4 min 30 s before the top of an hour, and ahead of the real time a pass may already have
  // stamped (pgboss.version's cron_on).
  clock = new TestClock(Math.ceil(Date.now() / HOUR) * HOUR + HOUR - 4 * MINUTE - 30_000);
  const start = () => startQueueWithDeliveries({ connectionString: db.env.DATABASE_URL }, { timeoutMs: 10_000, onError: (err) => errors.push(err), clock });
  bosses = [await start(), await start()];
  for (const boss of bosses) await startSchedules(boss, schedules, () => clock.now());
  // To 15 s past the next minute, where every count is taken: an occurrence is sent by the pass on
  // its minute (passes run every 30 s from the start, at :00 and :30), forwarded within 5 s
  // (pg-boss's cronWorkerIntervalSeconds) and run within 10 s more (the workers' poll).
  await clock.tick(45_000);
});
afterAll(async () => {
  for (const boss of bosses ?? []) await boss.stop({ graceful: false, close: true });
  await pool?.end();
  await db?.drop();
});

describe('scheduled sweeps across instances', () => {
  it('two instances with the scheduler: each minute one order-expiry job and one sweep; at the top of the hour one of each retention sweep', async () => {
    const before = await counts();
    expect(before.jobs).toEqual(before.runs);
    for (let minute = 1; minute <= 8; minute++) {
      await clock.tick(MINUTE);
      const now = await counts();
      // Counted at 56 min 15 s past, then each minute: the top of the hour is in the 4th.
      const hourly = minute >= 4 ? 1 : 0;
      expect(now.jobs, `minute ${minute}`).toEqual(plus(before.jobs, { 'order-expiry': minute, 'event-retention': hourly, 'idempotency-key-expiry': hourly }));
      expect(now.runs, `minute ${minute}`).toEqual(now.jobs);
    }
    // Eight minutes from 3 min 45 s before the hour hold exactly one top of the hour.
    expect(await counts()).toEqual({
      jobs: plus(before.jobs, { 'order-expiry': 8, 'event-retention': 1, 'idempotency-key-expiry': 1 }),
      runs: plus(before.runs, { 'order-expiry': 8, 'event-retention': 1, 'idempotency-key-expiry': 1 }),
    });
    expect(errors).toEqual([]);
  });

  it('with one instance stopped, the other still sends each occurrence once', async () => {
    await bosses[0]!.stop({ graceful: true, close: true });
    const before = await counts();
    for (let minute = 1; minute <= 3; minute++) await clock.tick(MINUTE);
    expect(await counts()).toEqual({ jobs: plus(before.jobs, { 'order-expiry': 3 }), runs: plus(before.runs, { 'order-expiry': 3 }) });
  });
});
