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
 * it is completed once it ends (with the others that end meanwhile), failed if it throws.
 */
export function startFairWorkers<T extends object>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    discover: () => Promise<Bucket[]>;
    /** Claims up to `batchSize` of a bucket's due jobs, no more of it running than `limit` across the fleet (jobs/queue.ts fetchBucket). */
    fetch?: (bucket: number, batchSize: number, limit: number) => Promise<Array<Job<T>>>;
    run: (job: Job<T>, release: () => void) => Promise<void>;
    /** Returns jobs claimed but not started to the queue, as they were (jobs/queue.ts handBack). */
    handBack: (jobs: Array<Job<T>>, bucket: number) => Promise<void>;
    onError: (err: Error) => void;
  },
  now: () => number = () => performance.now(),
): FairWorkers {
  const fetchBucket =
    hooks.fetch ?? ((bucket: number, batchSize: number, limit: number) => boss.fetch<T>(queue, { batchSize, minPriority: bucket, maxPriority: bucket, groupConcurrency: limit }));
  const running = { accounts: new Map<string, number>(), buckets: new Map<number, number>() };
  /** Worker-time of finished jobs per account (ms), and the start of each running one. */
  const used = new Map<string, number>();
  const startsOf = new Map<string, Set<number>>();
  const typical = new Map<string, number>();
  let busy = 0;
  const unfinished = new Set<Promise<void>>();
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
      busy--;
      wake();
    };
    const ending: Promise<void> = (async () => {
      const attempt: JobAttempt = { id: job.id, retryCount: job.retryCount };
      try {
        await hooks.run(job, release);
      } catch (err) {
        release();
        await boss.fail(queue, attempt, { message: (err as Error).message });
        return;
      }
      release();
      await complete(attempt);
    })()
      .then(
        () => {},
        (err: Error) => hooks.onError(err),
      )
      .finally(() => unfinished.delete(ending));
    unfinished.add(ending);
  }

  async function takeDueJobs(): Promise<void> {
    let buckets: Bucket[] = [];
    let discoveredAt = -Infinity;
    /** Buckets a fetch found emptier than planned: not fetched again until the next look. */
    const dry = new Set<number>();
    while (!stopping) {
      const free = shares.concurrency - busy;
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
      const candidates = buckets.filter((b) => b.limit > 0 && !dry.has(b.bucket));
      const plan = planFetches(free, candidates, { running, usage: usage(), estimate: (a) => typical.get(a) ?? FIRST_ESTIMATE_MS }, shares);
      if (plan.size === 0) {
        await idle(Math.max(1, discoveredAt + shares.pollMs - now()));
        continue;
      }
      const accountOf = new Map(candidates.map((b) => [b.bucket, b]));
      await Promise.all(
        [...plan].map(async ([bucket, count]) => {
          const { account, limit } = accountOf.get(bucket)!;
          let jobs: Array<Job<T>>;
          try {
            jobs = await fetchBucket(bucket, count, limit);
          } catch (err) {
            hooks.onError(err as Error);
            dry.add(bucket);
            return;
          }
          if (jobs.length < count) dry.add(bucket);
          if (jobs.length === 0) return;
          // Claimed as this instance began to stop: back to the queue as they were, for another instance.
          if (stopping) return hooks.handBack(jobs, bucket).catch(hooks.onError);
          for (const job of jobs) start(job, bucket, account);
        }),
      );
    }
  }

  const loop = takeDueJobs();
  return {
    async stop(timeoutMs) {
      stopping = true;
      wake();
      await loop;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(unfinished), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
