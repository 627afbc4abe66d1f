import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { withTransaction } from '../db/transaction.js';
import type { SecretBox } from './secrets.js';
import { postWebhook, type Attempt } from './send.js';
import { deadLetter, DELIVERY_QUEUE, enqueueDeliveries, type DeliveryJob } from './queue.js';
import { isoTimestamp } from '../db/isoTimestamp.js';
import { groupCommit } from '../db/groupCommit.js';
import type { Bucket } from '../jobs/fairShare.js';

export interface DeliveryOptions {
  timeoutMs: number;
  retryDelaysSeconds: number[];
  disableAfterSeconds: number;
  allowPrivateTargets: boolean;
  /** The circuit breaker: timeouts in a row that trip it, and the first pause (doubling with each trip after, at most an hour). */
  breaker: { timeouts: number; pauseSeconds: number };
}

/** The longest pause of an endpoint whose breaker keeps tripping. */
const MAX_PAUSE_SECONDS = 3600;

/**
 * The buckets (endpoints) with due deliveries, for the fair workers (jobs/fairWorkers.ts), in one
 * statement: a loose scan of the queue's priorities (pg-boss's index on name, priority, created_on,
 * start_after: one probe per endpoint with queued jobs, whatever its backlog), those with a job due
 * now (a LATERAL probe per bucket, in the index's order, that stops at the first: as an EXISTS, the
 * planner may make it a semi-join that reads every queued job, 55 ms a look with 144,000 queued, and
 * without the order a bitmap of all the bucket's), each with its account and its breaker. Reads pg-boss's job table (its documented schema, as the
 * queue-depth gauge does); an endpoint gone since its jobs were queued is bucket of no account ('').
 */
export const DISCOVER = `WITH RECURSIVE buckets AS (
    (SELECT priority FROM pgboss.job WHERE name = $1 AND state < 'active' AND NOT blocked ORDER BY priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT j.priority FROM pgboss.job j WHERE j.name = $1 AND j.state < 'active' AND NOT j.blocked AND j.priority < b.priority ORDER BY j.priority DESC LIMIT 1)
      FROM buckets b WHERE b.priority IS NOT NULL)
  SELECT b.priority AS bucket, coalesce(w.account_id::text, '') AS account,
         CASE WHEN w.paused_until > now() THEN 'paused' WHEN w.breaker_trips > 0 THEN 'probing' ELSE 'closed' END AS breaker
    FROM buckets b
    CROSS JOIN LATERAL (SELECT 1 FROM pgboss.job j WHERE j.name = $1 AND j.state < 'active' AND NOT j.blocked AND j.priority = b.priority AND j.start_after <= pgboss.job_now() ORDER BY j.created_on LIMIT 1) due
    LEFT JOIN webhook_endpoints w ON w.id = b.priority
   WHERE b.priority IS NOT NULL`;

/**
 * The fair workers' `discover`: each endpoint with due deliveries and how many of them may be in flight
 * at once across the fleet: none while its breaker pauses it, one (the probe) once the pause is over
 * until a success closes it, else its adaptive limit (endpointLimits.ts).
 */
export function deliveryBuckets(pool: pg.Pool, limitOf: (endpointId: number) => number, perEndpoint: number) {
  return async (): Promise<Bucket[]> => {
    const { rows } = await pool.query<{ bucket: number; account: string; breaker: 'paused' | 'probing' | 'closed' }>(DISCOVER, [DELIVERY_QUEUE]);
    return rows.map(({ bucket, account, breaker }) => ({
      bucket,
      account,
      limit: breaker === 'paused' ? 0 : breaker === 'probing' ? 1 : account === '' ? perEndpoint : limitOf(bucket),
    }));
  };
}

/** A redelivery series has ended (delivered, out of retries, its endpoint gone or disabled): another may start. */
const END_SERIES = 'UPDATE webhook_redeliveries SET ended_at = now() WHERE series = $1 AND ended_at IS NULL';

/** What each attempt reports, for the metrics. */
export type DeliveryOutcome = 'delivered' | 'failed' | 'disabled' | 'skipped' | 'deferred' | 'dead_lettered';

/**
 * What a delivery needs, for many jobs at once (their index `i` from 1, in order): the event, the
 * endpoint and its breaker, and whether this attempt was made. `probing`: the pause is over and no
 * delivery has closed the breaker since, so this attempt may go only as the one probe.
 */
const LOAD = `SELECT j.i::int, e.type, e.object, ${isoTimestamp('e.created_at')} AS "createdAt", w.url, w.secret,
         CASE WHEN w.previous_secret_until > now() THEN w.previous_secret END AS "previousSecret",
         w.status = 'enabled' AS enabled,
         CASE WHEN w.paused_until > now() THEN ${isoTimestamp('w.paused_until')} END AS "pausedUntil",
         w.breaker_trips > 0 AS probing, w.breaker_generation AS generation,
         EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.series = j.series AND d.attempt = j.attempt) AS done
    FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::int[]) WITH ORDINALITY AS j(event_id, endpoint_id, series, attempt, i)
    JOIN events e ON e.id = j.event_id JOIN webhook_endpoints w ON w.id = j.endpoint_id`;

interface Loaded {
  type: string; object: object; createdAt: string; url: string; secret: string; previousSecret: string | null; enabled: boolean;
  pausedUntil: string | null; probing: boolean; generation: number; done: boolean;
}

/**
 * The one probe of a half-open breaker, claimed across the fleet for the attempt's time: answers
 * nothing if another attempt holds the claim (then when it lapses), or if the breaker moved on.
 */
const CLAIM_PROBE = `UPDATE webhook_endpoints SET probe_until = now() + make_interval(secs => $3)
  WHERE id = $1 AND breaker_generation = $2 AND breaker_trips > 0 AND (probe_until IS NULL OR probe_until <= now())
  RETURNING 1`;
/** When a deferred attempt looks again: when the claim lapses or the breaker pauses again, and within a second (the probe may succeed at once). */
const PROBE_HELD_UNTIL = `SELECT ${isoTimestamp("least(greatest(probe_until, paused_until, now()), now() + interval '1 second')")} AS until FROM webhook_endpoints WHERE id = $1`;

/**
 * Successful attempts, many at once: each recorded unless already (the job ran twice), its endpoint
 * marked healthy if it was failing and its breaker closed (a success while the breaker is open, in
 * flight since before it tripped, closes nothing), the probe's success closing the breaker, and a
 * redelivery's series ended. Answers the (series, attempt) pairs recorded.
 */
const SETTLE_SUCCESSES = `WITH j AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::int[], $5::int[], $6::int[], $7::bool[], $8::bool[])
                      AS j(endpoint_id, event_id, series, attempt, status, duration_ms, redelivery, probe)),
      recorded AS (INSERT INTO webhook_deliveries (endpoint_id, event_id, series, attempt, response_status, duration_ms)
                   SELECT endpoint_id, event_id, series, attempt, status, duration_ms FROM j
                   ON CONFLICT (series, attempt) DO NOTHING RETURNING endpoint_id, series, attempt),
      outcome AS (SELECT r.endpoint_id, bool_or(j.probe) AS probe FROM recorded r JOIN j USING (series, attempt) GROUP BY r.endpoint_id),
      healthy AS (UPDATE webhook_endpoints w SET failing_since = NULL, timeouts_in_a_row = 0,
                         breaker_trips = CASE WHEN o.probe THEN 0 ELSE w.breaker_trips END,
                         breaker_generation = w.breaker_generation + CASE WHEN o.probe THEN 1 ELSE 0 END,
                         paused_until = CASE WHEN o.probe THEN NULL ELSE w.paused_until END,
                         probe_until = CASE WHEN o.probe THEN NULL ELSE w.probe_until END
                    FROM outcome o
                   WHERE w.id = o.endpoint_id AND (o.probe OR (w.failing_since IS NOT NULL AND w.breaker_trips = 0))),
      ended AS (UPDATE webhook_redeliveries SET ended_at = now()
                 WHERE series IN (SELECT r.series FROM recorded r JOIN j USING (series, attempt) WHERE j.redelivery) AND ended_at IS NULL)
 SELECT series, attempt FROM recorded`;

/** One row per attempt, unique per (series, attempt): a job run twice records once. */
const INSERT_ATTEMPT = `INSERT INTO webhook_deliveries (endpoint_id, event_id, series, attempt, response_status, duration_ms, error)
  VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (series, attempt) DO NOTHING`;

/** INSERT_ATTEMPT's parameters. */
const record = (job: DeliveryJob, attempt: Attempt, error: string | null) => [job.endpointId, job.eventId, job.series, job.attempt, attempt.status, attempt.durationMs, error];

/** ±20%, so that retries of many deliveries that failed together do not arrive together. */
const jitter = (seconds: number) => seconds * (0.8 + 0.4 * Math.random());

/** What one delivery did: its outcome, and for an attempt made, how it went (for the endpoint's adaptive limit). */
export interface Delivered {
  outcome: DeliveryOutcome;
  createdAt?: string;
  attempt?: { ok: boolean; durationMs: number };
}

/**
 * Runs one attempt of a delivery job: signs the event (Standard Webhooks, with the previous
 * secret too during a rotation), POSTs it, then records the attempt: a success in one statement
 * with the others that end meanwhile (each alone if that statement fails: db/groupCommit.ts), a
 * failure with the breaker and the next attempt (or the dead letter) in one transaction. The attempt's
 * row is unique per (series, attempt): a job run twice records and schedules once, and sends again at
 * most once. `pools`: the delivery's own connections, not the API's: `pool` for the short statements
 * every delivery makes, `failures` for the failures' transactions, so that a wave of failing
 * receivers (their records, breakers and retries) never holds up another endpoint's delivery.
 */
export function webhookDelivery(
  { pool, failures }: { pool: pg.Pool; failures: pg.Pool },
  boss: PgBoss,
  box: SecretBox,
  opts: DeliveryOptions,
) {
  // Deliveries that start at once share their round trips (db/groupCommit.ts): one LOAD, one settle.
  const load = groupCommit<DeliveryJob, Loaded | undefined>(async (jobs) => {
    const { rows } = await pool.query<Loaded & { i: number }>(LOAD, [jobs.map((j) => j.eventId), jobs.map((j) => j.endpointId), jobs.map((j) => j.series), jobs.map((j) => j.attempt)]);
    const found = Array.from<Loaded | undefined>({ length: jobs.length });
    for (const { i, ...row } of rows) found[i - 1] = row;
    return found;
  });
  type Success = { job: DeliveryJob; attempt: Attempt; probe: boolean };
  const settleSuccess = groupCommit<Success, DeliveryOutcome>(async (done) => {
    const column = <T>(f: (d: Success) => T) => done.map(f);
    const { rows } = await pool.query<{ series: string; attempt: number }>(SETTLE_SUCCESSES, [
      column((d) => d.job.endpointId), column((d) => d.job.eventId), column((d) => d.job.series), column((d) => d.job.attempt),
      column((d) => d.attempt.status), column((d) => d.attempt.durationMs), column((d) => d.job.redelivery === true), column((d) => d.probe),
    ]);
    const recorded = new Set(rows.map((r) => `${r.series} ${r.attempt}`));
    return done.map(({ job }) => (recorded.has(`${job.series} ${job.attempt}`) ? 'delivered' : 'skipped'));
  });
  /** The same attempt again at `until` (its job completes; this one takes its place). */
  const defer = async (job: DeliveryJob, until: string): Promise<Delivered> => {
    await withTransaction(pool, (client) => enqueueDeliveries(boss, client, [{ ...job, startAfter: new Date(until) }]));
    return { outcome: 'deferred' };
  };
  /**
   * An endpoint's failures are recorded one after another (each locks the endpoint's row): those that end
   * together wait here, not on the row lock holding a connection each.
   */
  const settling = new Map<number, Promise<unknown>>();
  const oneAtATime = <T>(endpointId: number, run: () => Promise<T>): Promise<T> => {
    const turn = (settling.get(endpointId) ?? Promise.resolve()).then(run, run);
    const last = turn.catch(() => {});
    settling.set(endpointId, last);
    void last.then(() => settling.get(endpointId) === last && settling.delete(endpointId));
    return turn;
  };
  /** How long a probe's claim lasts: its attempt's timeout, and a minute for a worker that died meanwhile. */
  const probeClaimSeconds = opts.timeoutMs / 1000 + 60;

  /** `sent`: called once a request has succeeded (its worker may take another delivery while this one is recorded). */
  async function deliver(job: DeliveryJob, sent: () => void = () => {}): Promise<Delivered> {
    const found = await load(job);
    // An attempt already made: nothing to send (its own run settles its series).
    if (found?.done) return { outcome: 'skipped' };
    // A deleted or disabled endpoint, a deleted event: nothing to send, and the series ends.
    if (!found || !found.enabled) {
      if (job.redelivery) await pool.query(END_SERIES, [job.series]);
      return { outcome: 'skipped' };
    }
    // Taken just as its endpoint was paused (the workers' look at the breakers lags a commit): the same attempt, after the pause.
    if (found.pausedUntil) return defer(job, found.pausedUntil);
    // Half-open: this attempt goes only as the one probe; another waits for the probe's outcome.
    const probe = found.probing;
    if (probe && (await pool.query(CLAIM_PROBE, [job.endpointId, found.generation, probeClaimSeconds])).rowCount === 0) {
      return defer(job, (await pool.query<{ until: string }>(PROBE_HELD_UNTIL, [job.endpointId])).rows[0]?.until ?? new Date().toISOString());
    }

    const id = `evt_${job.eventId}`;
    const body = JSON.stringify({ id, type: found.type, createdAt: found.createdAt, data: { object: found.object } });
    const now = new Date();
    const secrets = [found.secret, ...(found.previousSecret ? [found.previousSecret] : [])].map((sealed) => box.open(sealed));
    const signature = secrets.map((secret) => new Webhook(secret).sign(id, now, body)).join(' ');
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signature };
    const attempt = await postWebhook(found.url, body, headers, { timeoutMs: opts.timeoutMs, allowPrivate: opts.allowPrivateTargets });
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    const made = { ok, durationMs: attempt.durationMs };
    if (!ok) {
      const outcome = await oneAtATime(job.endpointId, () => withTransaction(failures, (client) => settleFailure(client, job, attempt, { probe, generation: found.generation })));
      return { outcome, createdAt: found.createdAt, attempt: made };
    }
    // A success is recorded with the others that end meanwhile, its worker already on the next delivery. A failure
    // (above) keeps its worker until it is recorded, so that the breaker it may trip holds before the endpoint's next attempt.
    sent();
    return { outcome: await settleSuccess({ job, attempt, probe }), createdAt: found.createdAt, attempt: made };
  }

  return deliver;

  /**
   * Records a failed attempt and what follows: 410 disables the endpoint; failing for
   * WEBHOOK_DISABLE_AFTER_SECONDS disables it; the breaker trips on its threshold of timeouts in a row,
   * or on the probe's failure, and only for attempts that began after its last trip or close (the
   * generation they loaded); then the next attempt of the schedule, or the dead-letter queue.
   */
  async function settleFailure(client: pg.PoolClient, job: DeliveryJob, attempt: Attempt, loaded: { probe: boolean; generation: number }): Promise<DeliveryOutcome> {
    const error = attempt.error ?? `status ${attempt.status}`;
    const recorded = await client.query(INSERT_ATTEMPT, record(job, attempt, error));
    if (recorded.rowCount === 0) return 'skipped';
    if (attempt.status === 410) {
      await disable(client, job, 'The endpoint answered 410 Gone.');
      return 'disabled';
    }
    // The endpoint's row is locked first: failures of the same endpoint ending together are counted one after another.
    const { rows: [current] } = await client.query<{ timeouts: number; generation: number }>(
      'SELECT timeouts_in_a_row AS timeouts, breaker_generation AS generation FROM webhook_endpoints WHERE id = $1 FOR UPDATE',
      [job.endpointId],
    );
    const counts = current !== undefined && current.generation === loaded.generation;
    const timedOut = attempt.timedOut === true;
    const trip = counts && (loaded.probe || (timedOut && current.timeouts + 1 >= opts.breaker.timeouts));
    const timeouts = !counts ? (current?.timeouts ?? 0) : trip || !timedOut ? 0 : current.timeouts + 1;
    const { rows } = await client.query<{ expired: boolean; since: string; pausedUntil: string | null }>(
      `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()), timeouts_in_a_row = $5,
              breaker_trips = breaker_trips + $6::int, breaker_generation = breaker_generation + $6::int,
              paused_until = CASE WHEN $6::int = 1 THEN now() + make_interval(secs => least($4 * 2 ^ breaker_trips, ${MAX_PAUSE_SECONDS})) ELSE paused_until END,
              probe_until = CASE WHEN $6::int = 1 OR $3 THEN NULL ELSE probe_until END
        WHERE id = $1
       RETURNING failing_since <= now() - make_interval(secs => $2) AS expired, ${isoTimestamp('failing_since')} AS since,
                 CASE WHEN $6::int = 1 THEN ${isoTimestamp('paused_until')} END AS "pausedUntil"`,
      [job.endpointId, opts.disableAfterSeconds, loaded.probe, opts.breaker.pauseSeconds, timeouts, trip ? 1 : 0],
    );
    if (rows[0]?.expired) {
      await disable(client, job, `Every delivery failed from ${rows[0].since} for ${opts.disableAfterSeconds} seconds; the last: ${error}.`);
      return 'disabled';
    }
    if (rows[0]?.pausedUntil) {
      // The breaker tripped: said in the delivery log, on the attempt that tripped it.
      const why = loaded.probe ? 'the probe failed' : `${current!.timeouts + 1} timeouts in a row`;
      await client.query(`UPDATE webhook_deliveries SET error = error || $3 WHERE series = $1 AND attempt = $2`, [
        job.series, job.attempt, `; ${why}: deliveries to this endpoint paused until ${rows[0].pausedUntil}, then one probe`,
      ]);
    }
    const delay = opts.retryDelaysSeconds[job.attempt - 1];
    if (delay !== undefined) {
      await enqueueDeliveries(boss, client, [{ ...job, attempt: job.attempt + 1, startAfter: new Date(Date.now() + jitter(delay) * 1000) }]);
      return 'failed';
    }
    // Out of retries: the dead-letter queue keeps it (with this attempt's row in the log), and a redelivery's series ends.
    await deadLetter(boss, client, { ...job, reason: `attempt ${job.attempt}, the last of the schedule, failed: ${error}` });
    if (job.redelivery) await client.query(END_SERIES, [job.series]);
    return 'dead_lettered';
  }

  async function disable(client: pg.PoolClient, job: DeliveryJob, reason: string) {
    await client.query(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1`, [job.endpointId, reason]);
    if (job.redelivery) await client.query(END_SERIES, [job.series]);
  }
}
