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
  /** How often to look for due jobs when the last look found fewer than there was room for. */
  pollMs: number;
}

export interface FairWorkers {
  /**
   * Takes no more jobs, hands back those claimed but not started (failed, so pg-boss offers them
   * again), and waits up to `timeoutMs` for the running ones; one still running then is left to
   * pg-boss's expiry.
   */
  stop(timeoutMs: number): Promise<void>;
}

/** Counts per key (an account, a group). */
class Tally {
  readonly counts = new Map<string, number>();
  add(key: string | undefined, by: 1 | -1) {
    if (key === undefined) return;
    const n = (this.counts.get(key) ?? 0) + by;
    if (n === 0) this.counts.delete(key);
    else this.counts.set(key, n);
  }
  of(key: string | undefined) {
    return key === undefined ? 0 : (this.counts.get(key) ?? 0);
  }
  atLimit(limit: number) {
    return [...this.counts].filter(([, n]) => n >= limit).map(([key]) => key);
  }
  /** The least room any key below `limit` has left (a key not yet counted has all of it). */
  leastRoom(limit: number) {
    return Math.min(limit, ...[...this.counts.values()].filter((n) => n < limit).map((n) => limit - n));
  }
}

/**
 * Runs a pg-boss queue's jobs with two shares at once: no account runs more than `perAccount` of
 * this instance's workers and no group (endpoint) more than `perGroup`, while the rest run other
 * accounts' due jobs. pg-boss's own workers cap one group dimension (localGroupConcurrency); this
 * fetches with pg-boss's `ignoreGroups` instead.
 *
 * Each account and group may have at most twice its share claimed: its share running, and as many
 * waiting here to start the moment one of its runs ends, so a busy endpoint's next delivery does
 * not wait for a fetch. A fetch leaves out every group at that bound and every group of an account
 * at it (`excluded`, which may add groups of its own, such as paused endpoints), and takes no more
 * than the least room left under it, so nothing beyond the bound is ever claimed and nothing is
 * claimed to be handed back: one account's backlog waits in the queue, where other instances and
 * other accounts' jobs pass it.
 */
export function startFairWorkers<T extends AccountJob>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    /** Groups not to take now, given the accounts at their bound. */
    excluded: (accountsAtBound: string[]) => Promise<string[]>;
    /** Runs one job; a throw fails it (pg-boss retries it by the queue's retry policy). */
    run: (job: Job<T>) => Promise<void>;
    onError: (err: Error) => void;
  },
): FairWorkers {
  const accountOf = (job: Job<T>) => (job.data.accountId === undefined ? undefined : String(job.data.accountId));
  const groupOf = (job: Job<T>) => job.groupId ?? undefined;
  const claimed = { accounts: new Tally(), groups: new Tally() };
  const runningOf = { accounts: new Tally(), groups: new Tally() };
  const waiting: Array<Job<T>> = [];
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
  const settle = (outcome: Promise<unknown>) =>
    outcome.then(
      () => {},
      (err: Error) => hooks.onError(err),
    );

  /** Starts every waiting job whose account and group are below their share, oldest first. */
  function startWaiting() {
    for (let i = 0; i < waiting.length && running.size < shares.concurrency; ) {
      const job = waiting[i]!;
      if (runningOf.accounts.of(accountOf(job)) >= shares.perAccount || runningOf.groups.of(groupOf(job)) >= shares.perGroup) {
        i++;
        continue;
      }
      waiting.splice(i, 1);
      start(job);
    }
  }

  function start(job: Job<T>) {
    const [account, group] = [accountOf(job), groupOf(job)];
    runningOf.accounts.add(account, 1);
    runningOf.groups.add(group, 1);
    const attempt = { id: job.id, retryCount: job.retryCount };
    const done: Promise<void> = settle(
      hooks.run(job).then(
        () => boss.complete(queue, attempt),
        (err: Error) => boss.fail(queue, attempt, { message: err.message }),
      ),
    ).finally(() => {
      for (const tally of [runningOf, claimed]) {
        tally.accounts.add(account, -1);
        tally.groups.add(group, -1);
      }
      running.delete(done);
      if (!stopping) startWaiting();
      wake();
    });
    running.add(done);
  }

  async function takeDueJobs(): Promise<void> {
    const bound = { concurrency: 2 * shares.concurrency, account: 2 * shares.perAccount, group: 2 * shares.perGroup };
    while (!stopping) {
      const room = Math.min(
        bound.concurrency - running.size - waiting.length,
        claimed.accounts.leastRoom(bound.account),
        claimed.groups.leastRoom(bound.group),
      );
      if (room <= 0) {
        await idle(shares.pollMs);
        continue;
      }
      let jobs: Array<Job<T>>;
      try {
        const ignoreGroups = [...claimed.groups.atLimit(bound.group), ...(await hooks.excluded(claimed.accounts.atLimit(bound.account)))];
        jobs = await boss.fetch<T>(queue, { batchSize: room, ignoreGroups });
      } catch (err) {
        hooks.onError(err as Error);
        await idle(shares.pollMs);
        continue;
      }
      for (const job of jobs) {
        claimed.accounts.add(accountOf(job), 1);
        claimed.groups.add(groupOf(job), 1);
        waiting.push(job);
      }
      startWaiting();
      // As much as there was room for: more may be due at once. Otherwise wait for the poll, or for a job to end.
      if (jobs.length < room) await idle(shares.pollMs);
    }
  }

  const loop = takeDueJobs();
  return {
    async stop(timeoutMs) {
      stopping = true;
      wake();
      await loop;
      // Claimed, never started: offered again at once to whichever instance fetches next.
      const unstarted = waiting.splice(0);
      if (unstarted.length > 0) {
        await boss.fail(queue, unstarted.map((job) => ({ id: job.id, retryCount: job.retryCount })), { message: 'instance stopping; not started' }).catch(hooks.onError);
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(running), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
