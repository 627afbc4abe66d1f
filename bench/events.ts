import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { DELIVERY_QUEUE } from '../src/webhooks/queue.js';
import { measure, percentile, type Arm, type Measurement } from './load.js';
import type { Receiver } from './receiver.js';

/** What the webhook part of the benchmark found (issue 28). */
export interface EventsResult {
  /** The backlog the throughput rounds queued, delivered by a worker started afterwards, for at most `drainSeconds`. */
  drain: { queued: number; delivered: number; seconds: number; perSecond: number };
  /** createPet at a fixed rate through the worker, its events delivered as they come (its CPU per create includes the delivery). */
  rate: number;
  creates: Measurement;
  /** From each of those events' change (createdAt) to its receipt, ms. */
  p50: number;
  p99: number;
  invalid?: string;
}

/** Subscribes the key's account to every event type (`*`) at the receiver (createWebhookEndpoint), as issue 45 measured round trips. */
export async function subscribe(baseUrl: string, key: string, url: string): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, eventTypes: ['*'], description: 'bench' }),
  });
  if (res.status !== 201) throw new Error(`createWebhookEndpoint → ${res.status}: ${await res.text()}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Once the worker (`arm.pid`: the service with its delivery workers on) runs: how fast it delivers
 * the rounds' backlog (for at most `drainSeconds`; what is left is then dropped from the queue),
 * then commit-to-receipt while `arm` (createPet) runs at `rate`. Invalid when an event of that
 * run is missing, or any event arrived twice.
 */
export async function measureDeliveries(
  databaseUrl: string,
  receiver: Receiver,
  arm: Arm,
  opts: { rate: number; seconds: number; warmupSeconds: number; connections: number; drainSeconds: number },
): Promise<EventsResult> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  // The events the endpoint gets: those its account reads (the database's one account; an event no account reads, such as
  // pet.updated of a pet made before accounts, is delivered to nobody).
  const lastEvent = async () =>
    (await db.query<{ n: number; last: number }>(`SELECT count(DISTINCT event_id)::int AS n, coalesce(max(event_id), 0)::int AS last FROM event_recipients`)).rows[0]!;
  try {
    // The rounds queued tens of thousands of jobs into a table analysed empty (autovacuum, and with it autoanalyze, may be
    // off on the bench's server): without fresh statistics pg-boss's fetch and the workers' look may plan for an empty table.
    await db.query('ANALYZE pgboss.job');
    const backlog = await lastEvent();
    const deadline = Date.now() + opts.drainSeconds * 1000;
    while (receiver.counts().events < backlog.n && Date.now() < deadline) await sleep(100);
    const [firstAt, lastAt] = receiver.span();
    const delivered = receiver.counts().events;
    const seconds = (lastAt - firstAt) / 1000;
    const drain = { queued: backlog.n, delivered, seconds, perSecond: (delivered - 1) / seconds };
    if (delivered < backlog.n) await dropQueued(databaseUrl);
    // Warmed up as every other arm is: the worker has delivered, but not yet taken a create (without it, the first
    // second's creates and dispatches waited up to 270 ms, all of the run's top 40, while the rest stayed under 160).
    await measure(arm, { ...opts, seconds: opts.warmupSeconds });
    // Until every warm-up event has arrived, twice 200 ms apart: a create still in flight as the load stopped commits
    // its event meanwhile (with an id below the last one's, it would count as the run's and never arrive in it).
    let warmed = await lastEvent();
    const warmedBy = Date.now() + 30_000;
    for (let settled = 0; settled < 2 && Date.now() < warmedBy; ) {
      await sleep(200);
      const seen = await lastEvent();
      settled = seen.n === warmed.n && receiver.delaysAbove(backlog.last).length >= seen.n - backlog.n ? settled + 1 : 0;
      warmed = seen;
    }
    // What autovacuum would have done by now (it may be off on the bench's server): the rounds, the drain and the drop
    // left the dead rows of every job, intent and row they changed, which the fixed-rate run's claims, dispatches and
    // writes would otherwise walk in their indexes.
    await db.query('VACUUM ANALYZE');
    // And the pages that made dirty written now, not by a checkpoint during the timed run.
    await db.query('CHECKPOINT');

    const creates = await measure(arm, opts);
    const made = (await lastEvent()).n - warmed.n;
    const until = Date.now() + 60_000;
    while (receiver.delaysAbove(warmed.last).length < made && Date.now() < until) await sleep(100);
    const delays = receiver.delaysAbove(warmed.last);
    // BENCH_STAGES=1: where the fixed-rate run's commit-to-receipt went, from pg-boss's job rows: the event's start to its
    // job (the outbox's dispatch), the job to its claim (waiting for a worker), the claim to its completion (sending).
    if (process.env.BENCH_STAGES) {
      const { rows } = await db.query(`SELECT (extract(epoch FROM j.created_on - e.created_at) * 1000)::int AS queued,
          (extract(epoch FROM j.started_on - j.created_on) * 1000)::int AS started,
          (extract(epoch FROM j.completed_on - j.started_on) * 1000)::int AS ran
        FROM pgboss.job j JOIN events e ON e.id = (j.data->>'eventId')::bigint WHERE j.name = 'webhook-delivery' AND e.id > $1`, [warmed.last]);
      const col = (k: string) => rows.map((r) => Number(r[k])).sort((a, b) => a - b);
      const pc = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))];
      for (const k of ['queued', 'started', 'ran']) process.stderr.write(`STAGE ${k}: n ${rows.length} p50 ${pc(col(k), 0.5)} p90 ${pc(col(k), 0.9)} p99 ${pc(col(k), 0.99)}\n`);
    }
    const { deliveries, events } = receiver.counts();
    const warmupArrived = receiver.delaysAbove(backlog.last).length - delays.length;
    const warmupMissing = warmed.n - backlog.n - warmupArrived;
    const problems = [
      ...(warmupMissing > 0 ? [`${warmupMissing} of the warm-up's events never arrived`] : []),
      ...(delays.length < made ? [`${made - delays.length} of the ${made} events at ${opts.rate}/s never arrived`] : []),
      ...(deliveries > events ? [`${deliveries - events} events arrived twice`] : []),
    ];
    return { drain, rate: opts.rate, creates, p50: percentile(delays, 0.5), p99: percentile(delays, 0.99), ...(problems.length ? { invalid: problems.join(', ') } : {}) };
  } finally {
    await db.end();
  }
}

/** Drops the deliveries still waiting (pg-boss's deleteQueuedJobs), so that the fixed-rate run starts with an empty queue. */
async function dropQueued(databaseUrl: string): Promise<void> {
  const boss = new PgBoss({ connectionString: databaseUrl, max: 1, schedule: false, supervise: false, migrate: false });
  // A connection of its own that fails (the database dropped at the end of a run) is said, not thrown.
  boss.on('error', (err) => process.stderr.write(`dropping the queued deliveries: ${err.message}\n`));
  await boss.start();
  try {
    // The worker is still claiming: a delete that deadlocks with a claim (40P01) is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        await boss.deleteQueuedJobs(DELIVERY_QUEUE);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== '40P01' || attempt === 5) throw err;
      }
    }
  } finally {
    await boss.stop({ graceful: false, close: true });
  }
}
