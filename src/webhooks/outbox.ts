import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { withTransaction } from '../db/transaction.js';
import { bucketOf, enqueueDeliveries } from './queue.js';

/** Intents one transaction turns into jobs: short transactions, one insert of pg-boss's each. */
export const OUTBOX_BATCH = 500;
/** How often an instance looks at the outbox unasked: rows another instance wrote and did not dispatch (it crashed, or its run failed). */
export const OUTBOX_BACKSTOP_MS = 1000;

/**
 * Takes up to $1 intents, oldest first, that no other dispatcher holds: SKIP LOCKED makes racing
 * dispatchers (any number of instances) take disjoint rows, and a row leaves the outbox only with
 * the commit that queued its job, so each becomes exactly one job, or stays for the next run.
 */
const TAKE = `DELETE FROM webhook_outbox WHERE id IN (SELECT id FROM webhook_outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
  RETURNING event_id AS "eventId", endpoint_id AS "endpointId", account_id AS "accountId"`;
/**
 * Whether a poll has anything to do: one read, outside a transaction, for the polls that find nothing. By
 * the primary key's order, an index probe: a scan of the table would read every dead row a busy outbox
 * leaves until vacuum comes (hundreds of pages after a burst).
 */
const ANY = 'SELECT EXISTS (SELECT 1 FROM webhook_outbox ORDER BY id LIMIT 1) AS any';

/**
 * One batch: its intents deleted and their delivery jobs queued (first attempts, a new series each),
 * in one transaction on `pool`; how many. An event or endpoint gone meanwhile is the job's to skip
 * (delivery.ts), as for any job queued before it went.
 */
export async function dispatchBatch(boss: PgBoss, pool: pg.Pool, limit = OUTBOX_BATCH): Promise<{ jobs: number; buckets: Set<number> }> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query<{ eventId: string; endpointId: string; accountId: string }>(TAKE, [limit]);
    await enqueueDeliveries(
      boss,
      client,
      rows.map((r) => ({ eventId: Number(r.eventId), endpointId: Number(r.endpointId), accountId: Number(r.accountId), series: randomUUID(), attempt: 1 })),
    );
    return { jobs: rows.length, buckets: new Set(rows.map((r) => bucketOf(Number(r.endpointId)))) };
  });
}

export interface OutboxDispatcher {
  /** Intents were just committed here: a run now (nudges during a run make one more run, however many). */
  written(): void;
  /** Runs no more, finishing the run under way. */
  stop(): Promise<void>;
}

/**
 * Turns the outbox's intents into delivery jobs (docs/WEBHOOKS.md, "From a change to a delivery"):
 * a run when nudged (`written`, after this instance's writes commit) and, as a backstop, every
 * `pollMs` (a poll loop like the fair workers', not a cron: pg-boss's scheduler works in minutes).
 * A run takes batches until one comes back short, and calls `dispatched` with how many jobs it
 * queued (the workers look for them at once). A failed run (the database away) is reported to
 * `onError`, its intents left in the outbox, and tried again after `pollMs`.
 */
export function startOutboxDispatcher(
  boss: PgBoss,
  pool: pg.Pool,
  opts: { pollMs?: number; batch?: number; dispatched?: (jobs: number, buckets: ReadonlySet<number>) => void; onError: (err: Error) => void },
): OutboxDispatcher {
  const pollMs = opts.pollMs ?? OUTBOX_BACKSTOP_MS;
  const batch = opts.batch ?? OUTBOX_BATCH;
  let stopping = false;
  let nudged = false;
  let interrupt = () => {};
  const wake = () => {
    nudged = true;
    interrupt();
  };
  /** Waits `ms`, or less if nudged (`heedNudges`) or stopped. */
  const idle = (ms: number, heedNudges: boolean) =>
    new Promise<void>((resolve) => {
      if (stopping || (heedNudges && nudged)) return resolve();
      const timer = setTimeout(resolve, ms);
      interrupt = () => {
        if (!heedNudges && !stopping) return;
        clearTimeout(timer);
        resolve();
      };
    });

  /** A nudged run knows there is work (a write just committed some); a poll looks first. */
  async function run(asked: boolean): Promise<void> {
    if (!asked && !(await pool.query<{ any: boolean }>(ANY)).rows[0]!.any) return;
    let total = 0;
    const buckets = new Set<number>();
    for (;;) {
      const { jobs, buckets: of } = await dispatchBatch(boss, pool, batch);
      total += jobs;
      for (const b of of) buckets.add(b);
      if (jobs < batch || stopping) break;
    }
    if (total > 0) opts.dispatched?.(total, buckets);
  }

  const loop = (async () => {
    while (!stopping) {
      const asked = nudged;
      nudged = false;
      let failed = false;
      try {
        await run(asked);
      } catch (err) {
        opts.onError(err as Error);
        failed = true;
      }
      // After a failure, nudges do not hurry the retry: the backstop's pace while the database is away.
      await idle(pollMs, !failed);
    }
  })();

  return {
    written: wake,
    async stop() {
      stopping = true;
      interrupt();
      await loop;
    },
  };
}
