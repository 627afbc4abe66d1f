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

export interface FairWorkers {
  /**
   * Takes no more jobs, hands back any claimed as it stopped (`handBack`: no retry counted, no delay),
   * and waits up to `timeoutMs` for the running ones to end and be completed; one still running then
   * is left to pg-boss's expiry.
   */
  stop(timeoutMs: number): Promise<void>;
}

/** Fetches of one bucket under way at once: one claiming while the next waits for its turn (they take turns on the bucket's lock). */
const FETCHES_PER_BUCKET = 2;

/** Ended jobs wait at most this long for their bucket's next claim to complete them (then they are completed on their own). */
const COMPLETE_WITHIN_MS = 20;

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
 * once it ends it is completed in its bucket's next claim (or with others within COMPLETE_WITHIN_MS),
 * failed if it throws. A busy bucket is claimed again once half its limit is free, at most two claims
 * of it under way.
 */
export function startFairWorkers<T extends object>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    discover: () => Promise<Bucket[]>;
    /**
     * Completes `completing` (jobs of the bucket that ended here), then claims up to `batchSize` of the bucket's
     * due jobs, no more of it active than `limit` across the fleet, in one transaction (jobs/queue.ts fetchBucket).
     */
    fetch?: (bucket: number, batchSize: number, limit: number, completing: JobAttempt[]) => Promise<Array<Job<T>>>;
    run: (job: Job<T>, release: () => void) => Promise<void>;
    /** Returns jobs claimed but not started to the queue, as they were (jobs/queue.ts handBack). */
    handBack: (jobs: Array<Job<T>>, bucket: number) => Promise<void>;
    onError: (err: Error) => void;
  },
  now: () => number = () => performance.now(),
): FairWorkers {
  const fetchBucket =
    hooks.fetch ??
    (async (bucket: number, batchSize: number, limit: number, completing: JobAttempt[]) => {
      if (completing.length > 0) await boss.complete(queue, completing);
      return boss.fetch<T>(queue, { batchSize, minPriority: bucket, maxPriority: bucket, groupConcurrency: limit });
    });
  const running = { accounts: new Map<string, number>(), buckets: new Map<number, number>() };
  /** Worker-time of finished jobs per account (ms), and the start of each running one. */
  const used = new Map<string, number>();
  const startsOf = new Map<string, Set<number>>();
  const typical = new Map<string, number>();
  let busy = 0;
  const unfinished = new Set<Promise<void>>();
  /** Jobs released and not yet handed to a completion, per bucket: still active in pg-boss, though their worker is free. */
  const ending = new Map<number, number>();
  /**
   * Jobs that ended, per bucket, waiting to be completed: with the bucket's next claim, in its transaction (so that
   * claim counts them as done, and no round trip of their own), or together on their own within COMPLETE_WITHIN_MS.
   */
  const toComplete = new Map<number, Array<{ attempt: JobAttempt; done: () => void; failed: (err: Error) => void }>>();
  let flushTimer: NodeJS.Timeout | undefined;
  /**
   * What changes a bucket's count of active jobs in pg-boss here (a claim, a completion, a failure) takes its turn:
   * a claim's allowance (`ending`) is read when its turn comes, and nothing of this instance changes the count
   * under it until its claim has committed, so the bound it claims by is exact.
   */
  const turns = new Map<number, Promise<unknown>>();
  const inTurn = <R>(bucket: number, run: () => Promise<R>): Promise<R> => {
    const mine = (turns.get(bucket) ?? Promise.resolve()).then(run, run);
    const settled = mine.catch(() => {});
    turns.set(bucket, settled);
    void settled.then(() => turns.get(bucket) === settled && turns.delete(bucket));
    return mine;
  };
  type Ended = { attempt: JobAttempt; done: () => void; failed: (err: Error) => void };
  /** Completes a bucket's ended jobs on their own (in one statement with others that end meanwhile), in the bucket's turn. */
  const completeAlone = (bucket: number) =>
    inTurn(bucket, async () => {
      const items = toComplete.get(bucket) ?? [];
      toComplete.delete(bucket);
      add(ending, bucket, -items.length);
      await Promise.all(items.map((item) => complete(item.attempt).then(item.done, item.failed)));
    });
  function flush() {
    flushTimer = undefined;
    for (const bucket of [...toComplete.keys()]) void completeAlone(bucket);
  }
  const completeLater = (bucket: number, attempt: JobAttempt) =>
    new Promise<void>((done, failed) => {
      toComplete.set(bucket, [...(toComplete.get(bucket) ?? []), { attempt, done, failed }]);
      flushTimer ??= setTimeout(flush, COMPLETE_WITHIN_MS);
    });
  /** Buckets a fetch found emptier than planned: not fetched again until the next look, or until one of theirs here ends. */
  const dry = new Set<number>();
  const complete = groupCommit<JobAttempt, void>(async (attempts) => {
    await boss.complete(queue, [...attempts]);
    return attempts.map(() => undefined);
  });
  let stopping = false;
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

  /** Forgets the worker-time of accounts with nothing running that no longer lead (planFetches lifts them to the floor anyway). */
  function forgetIdle(candidates: readonly Bucket[]) {
    const current = usage();
    const busyUsage = [...running.accounts.keys()].map((a) => current.get(a) ?? 0);
    const floor = busyUsage.length > 0 ? Math.min(...busyUsage) : Infinity;
    const wanted = new Set(candidates.map((c) => c.account));
    for (const [account, ms] of used) if (!running.accounts.has(account) && (!wanted.has(account) || ms <= floor)) used.delete(account);
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
        await inTurn(bucket, async () => {
          add(ending, bucket, -1);
          await boss.fail(queue, attempt, { message: (err as Error).message });
        });
        return;
      }
      release();
      await completeLater(bucket, attempt);
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
    add(fetchesOf, bucket, 1);
    const done: Promise<void> = (async () => {
      let jobs: Array<Job<T>> = [];
      try {
        jobs = await inTurn(bucket, async () => {
          // The bucket's ended jobs are completed in the claim's transaction, before it counts; those still ending
          // here count as active in pg-boss though their worker is free: not against the limit.
          const completing = toComplete.get(bucket) ?? [];
          toComplete.delete(bucket);
          add(ending, bucket, -completing.length);
          try {
            const claimed = await fetchBucket(bucket, count, limit + (ending.get(bucket) ?? 0), completing.map((c) => c.attempt));
            for (const c of completing) c.done();
            return claimed;
          } catch (err) {
            // Not completed with the claim: on their own, next.
            add(ending, bucket, completing.length);
            toComplete.set(bucket, [...completing, ...(toComplete.get(bucket) ?? [])]);
            void completeAlone(bucket);
            throw err;
          }
        });
      } catch (err) {
        hooks.onError(err as Error);
      } finally {
        add(asked.accounts, account, -count);
        add(asked.buckets, bucket, -count);
        askedInAll -= count;
        add(fetchesOf, bucket, -1);
      }
      if (jobs.length < count) dry.add(bucket);
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

  async function takeDueJobs(): Promise<void> {
    let buckets: Bucket[] = [];
    let discoveredAt = -Infinity;
    while (!stopping) {
      const free = shares.concurrency - busy - askedInAll;
      if (free <= 0) {
        await idle(shares.pollMs);
        continue;
      }
      if (now() - discoveredAt >= shares.pollMs) {
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
        (b) => b.limit > 0 && !dry.has(b.bucket) && (fetchesOf.get(b.bucket) ?? 0) < FETCHES_PER_BUCKET && (held(b) === 0 || b.limit - held(b) >= Math.ceil(b.limit / 2)),
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
    async stop(timeoutMs) {
      stopping = true;
      wake();
      await loop;
      clearTimeout(flushTimer);
      flush();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(unfinished), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
