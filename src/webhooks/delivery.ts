import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { withTransaction } from '../db/transaction.js';
import type { SecretBox } from './secrets.js';
import { postWebhook, type Attempt } from './send.js';
import { enqueueDeliveries, type DeliveryJob } from './queue.js';
import { isoTimestamp } from '../db/isoTimestamp.js';
import { groupCommit } from '../db/groupCommit.js';

export interface DeliveryOptions {
  timeoutMs: number;
  retryDelaysSeconds: number[];
  disableAfterSeconds: number;
  allowPrivateTargets: boolean;
  /** The circuit breaker: timeouts in a row that pause an endpoint, and the first pause (doubling with each timeout after, at most an hour). */
  breaker: { timeouts: number; pauseSeconds: number };
}

/** The longest pause of an endpoint that keeps timing out. */
const MAX_PAUSE_SECONDS = 3600;

/** How stale this instance's list of paused endpoints may be (another instance paused one meanwhile). */
const PAUSED_READ_MS = 1000;

/**
 * Endpoints whose deliveries may not be taken now (jobs/fairWorkers.ts leaves them out): those paused
 * by their circuit breaker, and every endpoint of the accounts with more than their share claimed. The
 * paused ones are read at most once a second, so a delivery costs no extra round trip unless an
 * account has more than its share claimed; an endpoint this instance pauses is left out at once, until its pause
 * ends, whatever a read begun before that pause committed says. (A delivery taken all the same
 * finds the pause when it loads, and waits it out: webhookDelivery.)
 */
export function endpointExclusions(pool: pg.Pool, now: () => number = Date.now) {
  let paused: string[] = [];
  let readAt = -Infinity;
  const pausedHere = new Map<string, number>();
  const withPausedHere = (ids: string[]) => {
    for (const [id, until] of pausedHere) if (until <= now()) pausedHere.delete(id);
    return pausedHere.size === 0 ? ids : [...new Set([...ids, ...pausedHere.keys()])];
  };
  return {
    paused(endpointId: number, until: string) {
      pausedHere.set(String(endpointId), Date.parse(until));
    },
    async excluded(accountsAbove: string[]): Promise<string[]> {
      if (accountsAbove.length === 0 && now() - readAt < PAUSED_READ_MS) return withPausedHere(paused);
      const { rows } = await pool.query<{ paused: string[]; ofAccounts: string[] }>(
        `SELECT coalesce(array_agg(id::text) FILTER (WHERE paused_until > now()), '{}') AS paused,
                coalesce(array_agg(id::text) FILTER (WHERE account_id = ANY ($1::bigint[])), '{}') AS "ofAccounts"
           FROM webhook_endpoints WHERE paused_until > now() OR account_id = ANY ($1::bigint[])`,
        [accountsAbove],
      );
      paused = rows[0]!.paused;
      readAt = now();
      return withPausedHere([...paused, ...rows[0]!.ofAccounts]);
    },
  };
}

/** A redelivery series has ended (delivered, out of retries, its endpoint gone or disabled): another may start. */
const END_SERIES = 'UPDATE webhook_redeliveries SET ended_at = now() WHERE series = $1 AND ended_at IS NULL';

/** What each attempt reports, for the metrics. */
export type DeliveryOutcome = 'delivered' | 'failed' | 'disabled' | 'skipped' | 'deferred';

/** What a delivery needs, for many jobs at once (their index `i` from 1, in order): the event, the endpoint, and whether this attempt was made. */
const LOAD = `SELECT j.i::int, e.type, e.object, ${isoTimestamp('e.created_at')} AS "createdAt", w.url, w.secret,
         CASE WHEN w.previous_secret_until > now() THEN w.previous_secret END AS "previousSecret",
         w.status = 'enabled' AS enabled,
         CASE WHEN w.paused_until > now() THEN ${isoTimestamp('w.paused_until')} END AS "pausedUntil",
         EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.series = j.series AND d.attempt = j.attempt) AS done
    FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::int[]) WITH ORDINALITY AS j(event_id, endpoint_id, series, attempt, i)
    JOIN events e ON e.id = j.event_id JOIN webhook_endpoints w ON w.id = j.endpoint_id`;

interface Loaded {
  type: string; object: object; createdAt: string; url: string; secret: string; previousSecret: string | null; enabled: boolean; pausedUntil: string | null; done: boolean;
}

/**
 * Successful attempts, many at once: each recorded unless already (the job ran twice), its endpoint
 * marked healthy if it was failing (every failure sets failing_since, so a healthy one needs no
 * write), and a redelivery's series ended. Answers the (series, attempt) pairs recorded.
 */
const SETTLE_SUCCESSES = `WITH j AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::int[], $5::int[], $6::int[], $7::bool[])
                      AS j(endpoint_id, event_id, series, attempt, status, duration_ms, redelivery)),
      recorded AS (INSERT INTO webhook_deliveries (endpoint_id, event_id, series, attempt, response_status, duration_ms)
                   SELECT endpoint_id, event_id, series, attempt, status, duration_ms FROM j
                   ON CONFLICT (series, attempt) DO NOTHING RETURNING endpoint_id, series, attempt),
      healthy AS (UPDATE webhook_endpoints SET failing_since = NULL, timeouts_in_a_row = 0, paused_until = NULL
                   WHERE id IN (SELECT endpoint_id FROM recorded) AND failing_since IS NOT NULL),
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

/**
 * Runs one attempt of a delivery job: signs the event (Standard Webhooks, with the previous
 * secret too during a rotation), POSTs it, then records the attempt: a success in one statement
 * with the others that end meanwhile, a failure with the next attempt's scheduling in one transaction. The attempt's row is unique per (series, attempt): a job run
 * twice (its worker died after sending) records and schedules once, and sends again at most once.
 */
export function webhookDelivery(
  pool: pg.Pool,
  boss: PgBoss,
  box: SecretBox,
  opts: DeliveryOptions,
  onPaused: (endpointId: number, until: string) => void = () => {},
) {
  // Deliveries that start at once share their round trips (db/groupCommit.ts): one LOAD, one settle.
  const load = groupCommit<DeliveryJob, Loaded | undefined>(async (jobs) => {
    const { rows } = await pool.query<Loaded & { i: number }>(LOAD, [jobs.map((j) => j.eventId), jobs.map((j) => j.endpointId), jobs.map((j) => j.series), jobs.map((j) => j.attempt)]);
    const found = Array.from<Loaded | undefined>({ length: jobs.length });
    for (const { i, ...row } of rows) found[i - 1] = row;
    return found;
  });
  const settleSuccess = groupCommit<{ job: DeliveryJob; attempt: Attempt }, DeliveryOutcome>(async (done) => {
    const column = <T>(f: (d: { job: DeliveryJob; attempt: Attempt }) => T) => done.map(f);
    const { rows } = await pool.query<{ series: string; attempt: number }>(SETTLE_SUCCESSES, [
      column((d) => d.job.endpointId), column((d) => d.job.eventId), column((d) => d.job.series), column((d) => d.job.attempt),
      column((d) => d.attempt.status), column((d) => d.attempt.durationMs), column((d) => d.job.redelivery === true),
    ]);
    const recorded = new Set(rows.map((r) => `${r.series} ${r.attempt}`));
    return done.map(({ job }) => (recorded.has(`${job.series} ${job.attempt}`) ? 'delivered' : 'skipped'));
  });

  /** `sent`: called once a request has succeeded (its worker may take another delivery while this one is recorded). */
  async function deliver(job: DeliveryJob, sent: () => void = () => {}): Promise<{ outcome: DeliveryOutcome; createdAt?: string }> {
    const found = await load(job);
    // An attempt already made: nothing to send (its own run settles its series).
    if (found?.done) return { outcome: 'skipped' };
    // A deleted or disabled endpoint, a deleted event: nothing to send, and the series ends.
    if (!found || !found.enabled) {
      if (job.redelivery) await pool.query(END_SERIES, [job.series]);
      return { outcome: 'skipped' };
    }
    // Taken just as its endpoint was paused (the workers' list of paused endpoints lags a commit): the same attempt, after the pause.
    if (found.pausedUntil) {
      await withTransaction(pool, (client) => enqueueDeliveries(boss, client, [{ ...job, startAfter: new Date(found.pausedUntil!) }]));
      return { outcome: 'deferred' };
    }

    const id = `evt_${job.eventId}`;
    const body = JSON.stringify({ id, type: found.type, createdAt: found.createdAt, data: { object: found.object } });
    const now = new Date();
    const secrets = [found.secret, ...(found.previousSecret ? [found.previousSecret] : [])].map((sealed) => box.open(sealed));
    const signature = secrets.map((secret) => new Webhook(secret).sign(id, now, body)).join(' ');
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': signature };
    const attempt = await postWebhook(found.url, body, headers, { timeoutMs: opts.timeoutMs, allowPrivate: opts.allowPrivateTargets });
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    if (!ok) return { outcome: await withTransaction(pool, (client) => settleFailure(client, job, attempt)), createdAt: found.createdAt };
    // A success is recorded with the others that end meanwhile, its worker already on the next delivery. A failure
    // (above) keeps its worker until it is recorded, so that the breaker it may open holds before the endpoint's next attempt.
    sent();
    return { outcome: await settleSuccess({ job, attempt }), createdAt: found.createdAt };
  }

  return deliver;

  async function settleFailure(client: pg.PoolClient, job: DeliveryJob, attempt: Attempt): Promise<DeliveryOutcome> {
    const error = attempt.error ?? `status ${attempt.status}`;
    const recorded = await client.query(INSERT_ATTEMPT, record(job, attempt, error));
    if (recorded.rowCount === 0) return 'skipped';
    if (attempt.status === 410) {
      await disable(client, job, 'The endpoint answered 410 Gone.');
      return 'disabled';
    }
    // A timeout counts toward the breaker ($3 timeouts in a row pause the endpoint for $4 s, doubling after); anything else resets it.
    const { rows } = await client.query<{ expired: boolean; since: string; timeouts: number; pausedUntil: string | null }>(
      `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, now()),
              timeouts_in_a_row = CASE WHEN $5 THEN timeouts_in_a_row + 1 ELSE 0 END,
              paused_until = CASE WHEN $5 AND timeouts_in_a_row + 1 >= $3
                                  THEN now() + make_interval(secs => least($4 * 2 ^ (timeouts_in_a_row + 1 - $3), ${MAX_PAUSE_SECONDS})) END
        WHERE id = $1
       RETURNING failing_since <= now() - make_interval(secs => $2) AS expired, ${isoTimestamp('failing_since')} AS since,
                 timeouts_in_a_row AS timeouts, ${isoTimestamp('paused_until')} AS "pausedUntil"`,
      [job.endpointId, opts.disableAfterSeconds, opts.breaker.timeouts, opts.breaker.pauseSeconds, attempt.timedOut === true],
    );
    if (rows[0]?.expired) {
      await disable(client, job, `Every delivery failed from ${rows[0].since} for ${opts.disableAfterSeconds} seconds; the last: ${error}.`);
      return 'disabled';
    }
    if (rows[0]?.pausedUntil) {
      onPaused(job.endpointId, rows[0].pausedUntil);
      // The breaker opened: said in the delivery log, on the attempt that opened it.
      await client.query(`UPDATE webhook_deliveries SET error = error || $3 WHERE series = $1 AND attempt = $2`, [
        job.series, job.attempt, `; ${rows[0].timeouts} timeouts in a row: deliveries to this endpoint paused until ${rows[0].pausedUntil}`,
      ]);
    }
    const delay = opts.retryDelaysSeconds[job.attempt - 1];
    if (delay !== undefined) {
      await enqueueDeliveries(boss, client, [{ ...job, attempt: job.attempt + 1, startAfter: new Date(Date.now() + jitter(delay) * 1000) }]);
    } else if (job.redelivery) await client.query(END_SERIES, [job.series]);
    return 'failed';
  }

  async function disable(client: pg.PoolClient, job: DeliveryJob, reason: string) {
    await client.query(`UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2 WHERE id = $1`, [job.endpointId, reason]);
    if (job.redelivery) await client.query(END_SERIES, [job.series]);
  }
}
