import type { Job, PgBoss } from 'pg-boss';

/** A job's data names the account it serves; its pg-boss group is the narrower key (a webhook endpoint). */
export interface AccountJob {
  accountId?: number;
}

export interface FairShares {
  /** Jobs this instance runs at once. */
  concurrency: number;
  /** Of those, at most this many of one account's... */
  perAccount: number;
  /** ...and of one group's (one endpoint's). */
  perGroup: number;
  /** How often to look for due jobs when the last look found fewer than there were free workers. */
  pollMs: number;
}

export interface FairWorkers {
  /** Takes no more jobs and waits up to `timeoutMs` for the running ones; a job still running then is left to pg-boss's expiry. */
  stop(timeoutMs: number): Promise<void>;
}

function add(counts: Map<string, number>, key: string | undefined, by: 1 | -1) {
  if (key === undefined) return;
  const n = (counts.get(key) ?? 0) + by;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
}
const atShare = (counts: Map<string, number>, share: number) => [...counts].filter(([, n]) => n >= share).map(([key]) => key);
/** The least room any key below its share has left (a key not yet counted has the whole share). */
const leastRoom = (counts: Map<string, number>, share: number) => Math.min(share, ...[...counts.values()].filter((n) => n < share).map((n) => share - n));

/**
 * Runs a pg-boss queue's jobs with two shares at once: no account holds more than `perAccount` of
 * this instance's workers and no group (endpoint) more than `perGroup`, while the rest take other
 * accounts' due jobs. pg-boss's own workers cap one group dimension (localGroupConcurrency); this
 * fetches with pg-boss's `ignoreGroups` instead, leaving out every group at its share, every group
 * of an account at its share (`excluded`, which may add groups of its own, such as paused
 * endpoints), so a job that may not run now is never claimed: no claim-and-hand-back churn while
 * one account's backlog waits. Nor can one fetch bring more of an account's or an endpoint's jobs
 * than its share has room for: a fetch takes no more than the smallest room left.
 */
export function startFairWorkers<T extends AccountJob>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    /** Groups not to take now, given the accounts at their share. */
    excluded: (accountsAtShare: string[]) => Promise<string[]>;
    /** Runs one job; a throw fails it (pg-boss retries it by the queue's retry policy). */
    run: (job: Job<T>) => Promise<void>;
    onError: (err: Error) => void;
  },
): FairWorkers {
  const byGroup = new Map<string, number>();
  const byAccount = new Map<string, number>();
  const running = new Set<Promise<void>>();
  let stopping = false;
  // A job that ends (or stop) while the loop is fetching still cuts its next wait short.
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
  const accountOf = (job: Job<T>) => (job.data.accountId === undefined ? undefined : String(job.data.accountId));
  const groupOf = (job: Job<T>) => job.groupId ?? undefined;

  function start(job: Job<T>) {
    const account = accountOf(job);
    const group = groupOf(job);
    add(byAccount, account, 1);
    add(byGroup, group, 1);
    const attempt = { id: job.id, retryCount: job.retryCount };
    const done: Promise<void> = hooks
      .run(job)
      .then(
        () => boss.complete(queue, attempt),
        (err: Error) => boss.fail(queue, attempt, { message: err.message }),
      )
      .then(
        () => {},
        (err: Error) => hooks.onError(err),
      )
      .finally(() => {
        add(byAccount, account, -1);
        add(byGroup, group, -1);
        running.delete(done);
        wake();
      });
    running.add(done);
  }

  async function takeDueJobs(): Promise<void> {
    while (!stopping) {
      const free = Math.min(shares.concurrency - running.size, leastRoom(byAccount, shares.perAccount), leastRoom(byGroup, shares.perGroup));
      if (free <= 0) {
        await idle(shares.pollMs);
        continue;
      }
      let jobs: Array<Job<T>>;
      try {
        const ignoreGroups = [...atShare(byGroup, shares.perGroup), ...(await hooks.excluded(atShare(byAccount, shares.perAccount)))];
        jobs = await boss.fetch<T>(queue, { batchSize: free, ignoreGroups });
      } catch (err) {
        hooks.onError(err as Error);
        await idle(shares.pollMs);
        continue;
      }
      for (const job of jobs) start(job);
      // A full batch: more may be due at once. Otherwise wait for the poll, or for a job to end.
      if (jobs.length < free) await idle(shares.pollMs);
    }
  }

  const loop = takeDueJobs();
  return {
    async stop(timeoutMs) {
      stopping = true;
      wake();
      await loop;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(running), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
