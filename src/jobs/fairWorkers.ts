import type { Job, JobAttempt, PgBoss } from 'pg-boss';
import { groupCommit } from '../db/groupCommit.js';

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

/** A look that leaves groups out costs their due backlog (pg-boss walks past it): at most a tenth of the time goes to such looks. */
const LEAVING_OUT_SPACING = 10;

export interface FairWorkers {
  /**
   * Takes no more jobs, hands back those claimed but not started (failed, so pg-boss offers them
   * again), and waits up to `timeoutMs` for the started ones to end and be completed; one still
   * running then is left to pg-boss's expiry.
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
  /** The keys with more than `share`. */
  above(share: number) {
    return [...this.counts].filter(([, n]) => n > share).map(([key]) => key);
  }
  /** The least room to `bound` of the keys with at most `share` (a key not yet counted has all of it). */
  leastRoom(share: number, bound: number) {
    return Math.min(bound, ...[...this.counts.values()].filter((n) => n <= share).map((n) => bound - n));
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
 * not wait for a fetch. A fetch leaves out every group with more than one and a half shares claimed
 * and every group of an account with more than that (`excluded`, which may add groups of its own,
 * such as paused endpoints), and takes no more than the least room left to twice the share, so
 * nothing beyond that bound is ever claimed, nothing is claimed to be handed back, and a busy group
 * is refilled half a share or more at a time rather than one job per fetch: one account's backlog
 * waits in the queue, where other instances and other accounts' jobs pass it.
 */
export function startFairWorkers<T extends AccountJob>(
  boss: PgBoss,
  queue: string,
  shares: FairShares,
  hooks: {
    /** Groups not to take now, given the accounts with more than their share claimed. */
    excluded: (accountsAbove: string[]) => Promise<string[]>;
    /**
     * Runs one job; a throw fails it (pg-boss retries it by the queue's retry policy). It holds its
     * worker, and counts against its shares, until it calls `release` (the part the shares bound is
     * over: a delivery's request) or ends; it is completed once it ends.
     */
    run: (job: Job<T>, release: () => void) => Promise<void>;
    onError: (err: Error) => void;
  },
  now: () => number = () => performance.now(),
): FairWorkers {
  const accountOf = (job: Job<T>) => (job.data.accountId === undefined ? undefined : String(job.data.accountId));
  const groupOf = (job: Job<T>) => job.groupId ?? undefined;
  const attemptOf = (job: Job<T>): JobAttempt => ({ id: job.id, retryCount: job.retryCount });
  const claimed = { accounts: new Tally(), groups: new Tally() };
  const runningOf = { accounts: new Tally(), groups: new Tally() };
  const waiting: Array<Job<T>> = [];
  /** Jobs that hold a worker. */
  let running = 0;
  /** Jobs started and not yet completed (or failed) in pg-boss: those running, and those released and ending. */
  const unfinished = new Set<Promise<void>>();
  const complete = groupCommit<JobAttempt, void>(async (attempts) => {
    await boss.complete(queue, [...attempts]);
    return attempts.map(() => undefined);
  });
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

  /** Starts every waiting job whose account and group are below their share, oldest first. */
  function startWaiting() {
    for (let i = 0; i < waiting.length && running < shares.concurrency; ) {
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
    running++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      for (const tally of [runningOf, claimed]) {
        tally.accounts.add(account, -1);
        tally.groups.add(group, -1);
      }
      running--;
      if (!stopping) startWaiting();
      wake();
    };
    const ending: Promise<void> = (async () => {
      const attempt = attemptOf(job);
      try {
        await hooks.run(job, release);
      } catch (err) {
        release();
        await boss.fail(queue, attempt, { message: (err as Error).message });
        return;
      }
      release();
      // Completed with the others that end meanwhile (groupCommit).
      await complete(attempt);
    })().then(
      () => {},
      (err: Error) => hooks.onError(err),
    ).finally(() => unfinished.delete(ending));
    unfinished.add(ending);
  }

  async function takeDueJobs(): Promise<void> {
    const bound = { concurrency: 2 * shares.concurrency, account: 2 * shares.perAccount, group: 2 * shares.perGroup };
    // Refilled once it holds no more than this (its share and half as many waiting), so that a few still wait while the refill is fetched.
    const refill = { account: shares.perAccount + Math.floor(shares.perAccount / 2), group: shares.perGroup + Math.floor(shares.perGroup / 2) };
    // After a look that found less than it had room for, the next waits for the poll, unless a group it left out has room since.
    let pollAt = 0;
    let leftOut = new Set<string>();
    // A look that leaves groups out walks past their due jobs (their backlog): the next such look waits ten times as long as it took.
    let leavingOutAt = 0;
    while (!stopping) {
      const room = Math.min(
        // Jobs released and still ending count too: however slow their ends, no more than the bound is held here.
        bound.concurrency - unfinished.size - waiting.length,
        claimed.accounts.leastRoom(refill.account, bound.account),
        claimed.groups.leastRoom(refill.group, bound.group),
      );
      if (room <= 0) {
        await idle(shares.pollMs);
        continue;
      }
      let jobs: Array<Job<T>>;
      let ignoreGroups: string[];
      try {
        ignoreGroups = [...claimed.groups.above(refill.group), ...(await hooks.excluded(claimed.accounts.above(refill.account)))];
        const freed = [...leftOut].some((group) => !ignoreGroups.includes(group));
        const wait = Math.max(freed ? 0 : pollAt - now(), ignoreGroups.length > 0 ? leavingOutAt - now() : 0);
        if (wait > 0) {
          await idle(wait);
          continue;
        }
        const began = now();
        jobs = await boss.fetch<T>(queue, { batchSize: room, ignoreGroups });
        if (ignoreGroups.length > 0) leavingOutAt = now() + LEAVING_OUT_SPACING * (now() - began);
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
      // As much as there was room for: more may be due at once. Otherwise the next look waits for the poll (or for room in a group left out).
      [pollAt, leftOut] = jobs.length < room ? [now() + shares.pollMs, new Set(ignoreGroups)] : [0, new Set()];
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
        await boss.fail(queue, unstarted.map(attemptOf), { message: 'instance stopping; not started' }).catch(hooks.onError);
      }
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled(unfinished), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
  };
}
