import type { Job, JobAttempt, PgBoss } from 'pg-boss';
import { groupCommit } from '../db/groupCommit.js';
import { planFetches, type Bucket } from './fairShare.js';

export interface FairShares {
  /** Jobs this instance runs at once. */
  concurrency: number;
  /** Workers kept free for accounts below their share (fairShare.ts). */
  reserve: number;
  /** The most one account runs here at once. */
  perAccount: number;
  /** How often to look for buckets with due jobs while workers are free. */
  pollMs: number;
}

/** Jobs of a bucket that ended here, settled in pg-boss by its next claim, in its transaction, before it counts. */
export interface Settling {
  complete: JobAttempt[];
  fail: Array<{ attempt: JobAttempt; message: string }>;
}

export interface FairWorkers {
  /**
   * Takes no more jobs, hands back any claimed as it stopped (`handBack`: no retry counted, no delay),
   * and waits up to `timeoutMs` for the running ones to end and be completed; one still running then
   * is left to pg-boss's expiry.
   */
  stop(timeoutMs: number): Promise<void>;
  /**
   * Jobs were just queued (by this instance) in `buckets`: those already known from the last look are fetched
   * now; for any other (or none named) the buckets are looked at now, not at the next poll.
   */
  lookNow(buckets?: Iterable<number>): void;
}

/** Fetches of one bucket under way at once: one claiming while the next waits for its turn (they take turns on the bucket's lock). */
const FETCHES_PER_BUCKET = 2;

/** How long ended jobs wait for their bucket's next claim to settle them before they are settled on their own. */
const SETTLE_WITHIN_MS = 20;
/**
 * How soon ended jobs whose settling failed (the database unreachable) are tried again. Dropped, they would stay
 * active in pg-boss until they expire, holding their bucket's allowance (an endpoint at limit 1 stalled for minutes).
 */
const SETTLE_RETRY_MS = 250;

/** What a job is expected to cost before its account has run any (ms). */
const FIRST_ESTIMATE_MS = 50;

/**
 * Runs a pg-boss queue's jobs fairly among accounts, in three parts:
 * - `discover` lists the buckets (one group each, a webhook endpoint) with due jobs, each with its
 *   account and how many of its jobs may run at once across every instance;
 * - planFetches (fairShare.ts) shares the free workers among the accounts by worker-time;
 * - one fetch per bucket takes that many of its jobs by priority (`minPriority` = `maxPriority` =
 *   the bucket), with `groupConcurrency` at the bucket's limit, which pg-boss counts in the database
 *   (active jobs of the group on every instance; `fetch`, jobs/queue.ts fetchBucket, makes instances take
 *   turns per bucket so the count is exact). A fetch walks only its own bucket's jobs, so it costs the
 *   same whatever other accounts have due.
 * Nothing is claimed that does not start at once. A job holds its worker, and is charged to its
 * account, until it calls `release` (the part the shares bound is over: a delivery's request) or ends;
 * once it ends it is completed (failed, if it threw) by its bucket's next claim, or on its own within
 * SETTLE_WITHIN_MS. A busy bucket is claimed again once half its limit is free, at most two claims
 * of it under way.
 */
export function startFairWorkers<T extends object>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    discover: () => Promise<Bucket[]>;
    /**
     * Settles `settling` (jobs of the bucket that ended here), then claims up to `batchSize` of the bucket's due
     * jobs, no more of it active than `limit` across the fleet, in one transaction (jobs/queue.ts fetchBucket).
     */
    fetch?: (bucket: number, batchSize: number, limit: number, settling: Settling) => Promise<Array<Job<T>>>;
    run: (job: Job<T>, release: () => void) => Promise<void>;
    /** Returns jobs claimed but not started to the queue, as they were (jobs/queue.ts handBack). */
    handBack: (jobs: Array<Job<T>>, bucket: number) => Promise<void>;
    onError: (err: Error) => void;
  },
  now: () => number = () => performance.now(),
): FairWorkers {
  const fetchBucket =
    hooks.fetch ??
    (async (bucket: number, batchSize: number, limit: number, settling: Settling) => {
      if (settling.complete.length > 0) await boss.complete(queue, settling.complete);
      for (const { attempt, message } of settling.fail) await boss.fail(queue, attempt, { message });
      return boss.fetch<T>(queue, { batchSize, minPriority: bucket, maxPriority: bucket, groupConcurrency: limit });
    });
  const running = { accounts: new Map<string, number>(), buckets: new Map<number, number>() };
  /** Worker-time of finished jobs per account (ms), and the start of each running one. */
  const used = new Map<string, number>();
  const startsOf = new Map<string, Set<number>>();
  const typical = new Map<string, number>();
  let busy = 0;
  const unfinished = new Set<Promise<void>>();
  /** Jobs released and not yet taken to be settled, per bucket: still active in pg-boss, though their worker is free. */
  const ending = new Map<number, number>();
  /**
   * Jobs that ended, per bucket, waiting to be settled in pg-boss (completed, or failed with `error`): by the bucket's
   * next claim, in its transaction (no round trip of their own, and that claim counts them as done), or on their own.
   */
  type Ended = { attempt: JobAttempt; error?: Error; since: number; done: () => void; failed: (err: Error) => void };
  const toSettle = new Map<number, Ended[]>();
  let flushTimer: NodeJS.Timeout | undefined;
  /**
   * Exactness of the bound: a claim's allowance counts this instance's ended jobs still active in pg-boss (`ending`),
   * so none of them may leave the active state while a claim of their bucket is under way here. They are settled
   * only by a claim that starts with no other of its bucket under way (in its own transaction, before it counts), or
   * on their own when none is under way; a bucket whose ended jobs have waited SETTLE_WITHIN_MS takes no overlapping
   * claim, so that its claims drain and one settles them.
   */
  const takeEnded = (bucket: number): Ended[] => {
    const items = toSettle.get(bucket) ?? [];
    toSettle.delete(bucket);
    add(ending, bucket, -items.length);
    return items;
  };
  function flush() {
    flushTimer = undefined;
    for (const bucket of [...toSettle.keys()]) {
      if ((fetchesOf.get(bucket) ?? 0) > 0) continue;
      for (const item of takeEnded(bucket)) {
        add(settlingAlone, bucket, 1);
        const settled = item.error ? boss.fail(queue, item.attempt, { message: item.error.message }).then(() => {}) : complete(item.attempt);
        settled
          .finally(() => {
            add(settlingAlone, bucket, -1);
            wake();
          })
          .then(item.done, (err: Error) => (stopping ? item.failed(err) : retrySettling(bucket, item, err)));
      }
    }
    if (toSettle.size > 0) flushTimer = setTimeout(flush, SETTLE_WITHIN_MS);
  }
  /** takeEnded undone for items not settled after all (still active in pg-boss): first in line again, flushed within `afterMs`. */
  function giveBack(bucket: number, items: Ended[], afterMs: number) {
    toSettle.set(bucket, [...items, ...(toSettle.get(bucket) ?? [])]);
    add(ending, bucket, items.length);
    flushTimer ??= setTimeout(flush, afterMs);
  }
  function retrySettling(bucket: number, item: Ended, err: Error) {
    hooks.onError(err);
    giveBack(bucket, [item], SETTLE_RETRY_MS);
  }
  const settleLater = (bucket: number, attempt: JobAttempt, error?: Error) =>
    new Promise<void>((done, failed) => {
      toSettle.set(bucket, [...(toSettle.get(bucket) ?? []), { attempt, error, since: now(), done, failed }]);
      flushTimer ??= setTimeout(flush, SETTLE_WITHIN_MS);
    });
  /**
   * Ended jobs being settled on their own, per bucket: the bucket is not claimed until they are. A claim would not
   * count them in its allowance while pg-boss may still count them active, and a group at its limit makes pg-boss's
   * fetch read every due job of the bucket to find none (the whole backlog, 100 ms and more at 50,000).
   */
  const settlingAlone = new Map<number, number>();
  /** A bucket whose ended jobs have waited too long for a claim of their own: no claim may overlap another until they are settled. */
  const overdue = (bucket: number) => (toSettle.get(bucket)?.[0]?.since ?? Infinity) <= now() - SETTLE_WITHIN_MS;
  /** Buckets a fetch found emptier than planned: not fetched again until the next look, or until one of theirs here ends. */
  const dry = new Set<number>();
  /**
   * When each bucket with a fetch under way was last named by lookNow (a count of calls): a fetch that began before
   * jobs were queued may not have seen them, so coming back short it does not make its bucket dry (they would wait
   * for the next look). Kept only while the bucket's fetches are under way: a fetch that begins later sees the jobs.
   */
  let nudges = 0;
  const nudgedAt = new Map<number, number>();
  const complete = groupCommit<JobAttempt, void>(async (attempts) => {
    await boss.complete(queue, [...attempts]);
    return attempts.map(() => undefined);
  });
  let stopping = false;
  /** lookNow was called: the next look at the buckets is not to wait for pollMs. */
  let stale = false;
  let woken = false;
  let interrupt = () => {};
  const wake = () => {
    woken = true;
    interrupt();
  };
  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      if (woken) return resolve();
      const timer = setTimeout(resolve, ms);
      interrupt = () => {
        clearTimeout(timer);
        resolve();
      };
    }).then(() => {
      woken = false;
    });
  const add = <K>(map: Map<K, number>, key: K, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n === 0) map.delete(key);
    else map.set(key, n);
  };

  function usage(): Map<string, number> {
    const at = now();
    const total = new Map(used);
    for (const [account, starts] of startsOf) for (const s of starts) total.set(account, (total.get(account) ?? 0) + at - s);
    return total;
  }

  /** Forgets the worker-time of accounts with nothing running that no longer lead (planFetches lifts them to the floor anyway), and the estimates of those with nothing due. */
  function forgetIdle(candidates: readonly Bucket[]) {
    const current = usage();
    const busyUsage = [...running.accounts.keys()].map((a) => current.get(a) ?? 0);
    const floor = busyUsage.length > 0 ? Math.min(...busyUsage) : Infinity;
    const wanted = new Set(candidates.map((c) => c.account));
    for (const [account, ms] of used) {
      if (running.accounts.has(account) || (wanted.has(account) && ms > floor)) continue;
      used.delete(account);
      // Its estimate goes too: an account gone idle would otherwise be remembered for ever.
      if (!wanted.has(account)) typical.delete(account);
    }
  }

  function start(job: Job<T>, bucket: number, account: string) {
    const began = now();
    add(running.accounts, account, 1);
    add(running.buckets, bucket, 1);
    busy++;
    const starts = startsOf.get(account) ?? new Set<number>();
    starts.add(began);
    startsOf.set(account, starts);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const held = now() - began;
      starts.delete(began);
      if (starts.size === 0) startsOf.delete(account);
      used.set(account, (used.get(account) ?? 0) + held);
      typical.set(account, 0.8 * (typical.get(account) ?? held) + 0.2 * held);
      add(running.accounts, account, -1);
      add(running.buckets, bucket, -1);
      add(ending, bucket, 1);
      busy--;
      dry.delete(bucket);
      wake();
    };
    const ended: Promise<void> = (async () => {
      const attempt: JobAttempt = { id: job.id, retryCount: job.retryCount };
      try {
        await hooks.run(job, release);
      } catch (err) {
        release();
        await settleLater(bucket, attempt, err as Error);
        return;
      }
      release();
      await settleLater(bucket, attempt);
    })()
      .then(
        () => {},
        (err: Error) => hooks.onError(err),
      )
      .finally(() => unfinished.delete(ended));
    unfinished.add(ended);
  }

  /** Jobs asked for by the fetches under way, per account and per bucket (counted as running when planning), and those fetches. */
  const asked = { accounts: new Map<string, number>(), buckets: new Map<number, number>() };
  let askedInAll = 0;
  const fetchesOf = new Map<number, number>();
  const fetches = new Set<Promise<void>>();

  /** Claims up to `count` of a bucket's due jobs and starts them, without holding up the loop: the next plan counts them as asked. */
  function claim(bucket: number, count: number, account: string, limit: number) {
    add(asked.accounts, account, count);
    add(asked.buckets, bucket, count);
    askedInAll += count;
    const alone = (fetchesOf.get(bucket) ?? 0) === 0;
    const begun = nudges;
    add(fetchesOf, bucket, 1);
    const done: Promise<void> = (async () => {
      let jobs: Array<Job<T>> = [];
      try {
        // Alone among this bucket's claims: it settles the ended jobs in its transaction, before it counts (none
        // leaves the active state under an overlapping claim's allowance; see takeEnded).
        const settling = alone ? takeEnded(bucket) : [];
        try {
          jobs = await fetchBucket(bucket, count, limit + (ending.get(bucket) ?? 0), {
            complete: settling.filter((e) => !e.error).map((e) => e.attempt),
            fail: settling.filter((e) => e.error).map((e) => ({ attempt: e.attempt, message: e.error!.message })),
          });
          for (const e of settling) e.done();
        } catch (err) {
          // Not settled with the claim: on their own, once no claim of the bucket is under way.
          giveBack(bucket, settling, SETTLE_WITHIN_MS);
          throw err;
        }
      } catch (err) {
        hooks.onError(err as Error);
      } finally {
        add(asked.accounts, account, -count);
        add(asked.buckets, bucket, -count);
        askedInAll -= count;
        add(fetchesOf, bucket, -1);
      }
      const nudged = (nudgedAt.get(bucket) ?? 0) > begun;
      if (!fetchesOf.has(bucket)) nudgedAt.delete(bucket);
      if (jobs.length < count && !nudged) dry.add(bucket);
      // Claimed as this instance began to stop: back to the queue as they were, for another instance.
      if (stopping) {
        if (jobs.length > 0) await hooks.handBack(jobs, bucket).catch(hooks.onError);
      } else for (const job of jobs) start(job, bucket, account);
      wake();
    })().finally(() => fetches.delete(done));
    fetches.add(done);
  }

  const withAsked = <K>(mine: Map<K, number>, theirs: Map<K, number>) => {
    const sum = new Map(mine);
    for (const [key, n] of theirs) sum.set(key, (sum.get(key) ?? 0) + n);
    return sum;
  };

  /** The buckets of the last look. */
  let buckets: Bucket[] = [];
  async function takeDueJobs(): Promise<void> {
    let discoveredAt = -Infinity;
    while (!stopping) {
      const free = shares.concurrency - busy - askedInAll;
      if (free <= 0) {
        await idle(shares.pollMs);
        continue;
      }
      if (stale || now() - discoveredAt >= shares.pollMs) {
        stale = false;
        try {
          buckets = await hooks.discover();
        } catch (err) {
          hooks.onError(err as Error);
          await idle(shares.pollMs);
          continue;
        }
        discoveredAt = now();
        dry.clear();
        forgetIdle(buckets);
        continue;
      }
      // At most two fetches of a bucket under way (the second waits for the first's lock, fetchBucket, then counts its claims),
      // and a busy bucket is refilled once half its limit is free: a fetch per few jobs, not one per job.
      const held = (b: Bucket) => (running.buckets.get(b.bucket) ?? 0) + (asked.buckets.get(b.bucket) ?? 0);
      const candidates = buckets.filter(
        (b) =>
          b.limit > 0 &&
          !dry.has(b.bucket) &&
          !settlingAlone.has(b.bucket) &&
          (fetchesOf.get(b.bucket) ?? 0) < (overdue(b.bucket) ? 1 : FETCHES_PER_BUCKET) &&
          (held(b) === 0 || b.limit - held(b) >= Math.ceil(b.limit / 2)),
      );
      const load = { running: { accounts: withAsked(running.accounts, asked.accounts), buckets: withAsked(running.buckets, asked.buckets) }, usage: usage(), estimate: (a: string) => typical.get(a) ?? FIRST_ESTIMATE_MS };
      const plan = planFetches(free, candidates, load, shares);
      if (plan.size === 0) {
        await idle(Math.max(1, discoveredAt + shares.pollMs - now()));
        continue;
      }
      const of = new Map(candidates.map((b) => [b.bucket, b]));
      for (const [bucket, count] of plan) claim(bucket, count, of.get(bucket)!.account, of.get(bucket)!.limit);
    }
    await Promise.allSettled(fetches);
  }

  const loop = takeDueJobs();
  return {
    lookNow(queued) {
      const named = [...(queued ?? [])];
      const known = new Set(buckets.map((b) => b.bucket));
      if (!queued || named.some((bucket) => !known.has(bucket))) stale = true;
      nudges++;
      for (const bucket of named) {
        dry.delete(bucket);
        if (fetchesOf.has(bucket)) nudgedAt.set(bucket, nudges);
      }
      wake();
    },
    async stop(timeoutMs) {
      stopping = true;
      wake();
      await loop;
      // Whatever ended and waits is settled now (no claim is under way any more).
      clearTimeout(flushTimer);
      flush();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(unfinished), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
