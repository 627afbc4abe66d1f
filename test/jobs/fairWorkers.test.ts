import type { Job, PgBoss } from 'pg-boss';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startFairWorkers, type AccountJob } from '../../src/jobs/fairWorkers.js';

/** A queue in memory that fetches as pg-boss does: oldest first, leaving out `ignoreGroups`, at most `batchSize`. */
function fakeQueue(jobs: Array<{ account: number; endpoint: string }>, leavingOutMs = 0) {
  const toJob = (j: { account: number; endpoint: string }, i: number) => ({ id: String(i), groupId: j.endpoint, data: { accountId: j.account }, retryCount: 0 }) as unknown as Job<AccountJob>;
  const waiting = jobs.map(toJob);
  const settled: string[] = [];
  /** Every fetch: its batch size, the groups it left out, and how many it took. */
  const fetches: Array<{ batchSize: number; ignoreGroups: string[]; took: number }> = [];
  const boss = {
    async fetch(_queue: string, opts: { batchSize: number; ignoreGroups: string[] }) {
      // Leaving groups out costs time (pg-boss walks past their due jobs).
      if (opts.ignoreGroups.length > 0 && leavingOutMs > 0) await new Promise((resolve) => setTimeout(resolve, leavingOutMs));
      const taken: Array<Job<AccountJob>> = [];
      for (let i = 0; i < waiting.length && taken.length < opts.batchSize; ) {
        if (opts.ignoreGroups.includes(waiting[i]!.groupId!)) i++;
        else taken.push(...waiting.splice(i, 1));
      }
      fetches.push({ batchSize: opts.batchSize, ignoreGroups: opts.ignoreGroups, took: taken.length });
      return taken;
    },
    async complete(_queue: string, attempts: { id: string } | Array<{ id: string }>) {
      for (const attempt of [attempts].flat()) settled.push(attempt.id);
    },
    async fail(_queue: string, attempts: { id: string } | Array<{ id: string }>) {
      for (const attempt of [attempts].flat()) settled.push(`failed ${attempt.id}`);
    },
  } as unknown as PgBoss;
  const add = (j: { account: number; endpoint: string }) => waiting.push(toJob(j, jobs.length + waiting.length + settled.length));
  return { boss, waiting, settled, fetches, add };
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('fair workers: shares per account and per endpoint', () => {
  it('never runs more than an account or an endpoint may hold, takes the other accounts meanwhile, and runs every job once', async () => {
    // Account 1's 20 jobs are due first (10 to each of its two endpoints), then account 2's 10.
    const endpointsOf: Record<string, string[]> = { 1: ['e1', 'e2'], 2: ['e3'] };
    const jobs = [
      ...Array.from({ length: 10 }, () => [{ account: 1, endpoint: 'e1' }, { account: 1, endpoint: 'e2' }]).flat(),
      ...Array.from({ length: 10 }, () => ({ account: 2, endpoint: 'e3' })),
    ];
    const { boss, waiting, settled } = fakeQueue(jobs);
    const running = new Map<string, () => void>();
    const byKey = new Map<string, number>();
    const peak = new Map<string, number>();
    const bump = (key: string, by: number) => {
      byKey.set(key, (byKey.get(key) ?? 0) + by);
      peak.set(key, Math.max(peak.get(key) ?? 0, byKey.get(key)!));
    };
    const workers = startFairWorkers(boss, 'q', { concurrency: 6, perAccount: 3, perGroup: 2, pollMs: 1 }, {
      excluded: async (accounts) => accounts.flatMap((a) => endpointsOf[a]!),
      run: (job) =>
        new Promise<void>((resolve) => {
          const keys = [`account ${job.data.accountId}`, `endpoint ${job.groupId}`];
          keys.forEach((k) => bump(k, 1));
          running.set(job.id, () => {
            keys.forEach((k) => bump(k, -1));
            running.delete(job.id);
            resolve();
          });
        }),
      onError: (err) => {
        throw err;
      },
    });
    // Account 1 holds its share (3: two to e1, one to e2) and account 2 its endpoint's (2), though its jobs were due last.
    // (Waited for: a fetch that leaves account 1 out may wait a few ms behind the last, by the loop's own clock.)
    await vi.waitFor(() => expect([byKey.get('account 1'), byKey.get('endpoint e1'), byKey.get('endpoint e2'), byKey.get('account 2')]).toEqual([3, 2, 1, 2]));
    // Release whatever runs until nothing is left.
    while (running.size > 0 || waiting.length > 0) {
      for (const release of [...running.values()]) release();
      await settle();
    }
    await workers.stop(1000);
    expect([...settled].sort()).toEqual(jobs.map((_, i) => String(i)).sort());
    expect(Object.fromEntries(peak)).toEqual({ 'account 1': 3, 'endpoint e1': 2, 'endpoint e2': 2, 'account 2': 2, 'endpoint e3': 2 });
  });

  it('stop takes no more jobs, hands back the one claimed to follow (failed, so it is offered again), and waits for the running one', async () => {
    const { boss, waiting, settled } = fakeQueue([{ account: 1, endpoint: 'e1' }, { account: 1, endpoint: 'e1' }, { account: 1, endpoint: 'e1' }]);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const workers = startFairWorkers(boss, 'q', { concurrency: 4, perAccount: 4, perGroup: 1, pollMs: 1 }, { excluded: async () => [], run: () => held, onError: () => {} });
    await new Promise((resolve) => setImmediate(resolve));
    const stopped = workers.stop(10_000);
    release();
    await stopped;
    // One endpoint's share of 1 running, and 1 more claimed to follow it; the third never claimed.
    expect([[...settled].sort(), waiting.length]).toEqual([['0', 'failed 1'], 1]);
  });

  it('refills a busy endpoint a few jobs at a time, never one job per fetch', async () => {
    const jobs = Array.from({ length: 40 }, () => ({ account: 1, endpoint: 'e1' }));
    const { boss, settled, fetches } = fakeQueue(jobs);
    const workers = startFairWorkers(boss, 'q', { concurrency: 8, perAccount: 8, perGroup: 4, pollMs: 1 }, {
      excluded: async () => [],
      run: () => new Promise<void>((resolve) => setImmediate(resolve)),
      onError: (err) => {
        throw err;
      },
    });
    await vi.waitFor(() => expect(settled).toHaveLength(jobs.length));
    await workers.stop(1000);
    expect([...settled].sort()).toEqual(jobs.map((_, i) => String(i)).sort());
    // Refilled at one and a half shares (6) up to two (8): at least 2 a fetch, however fast the jobs end.
    const taking = fetches.filter((f) => f.took > 0);
    expect(Math.min(...taking.map((f) => f.took))).toBeGreaterThanOrEqual(2);
    expect(taking.length).toBeLessThan(jobs.length / 2);
  });

  it("a worker released early takes the group's next job while the released one is still ending; stop waits for both", async () => {
    const { boss, settled } = fakeQueue([{ account: 1, endpoint: 'e1' }, { account: 1, endpoint: 'e1' }]);
    let finish!: () => void;
    const ending = new Promise<void>((resolve) => (finish = resolve));
    const started: string[] = [];
    const workers = startFairWorkers(boss, 'q', { concurrency: 1, perAccount: 1, perGroup: 1, pollMs: 1 }, {
      excluded: async () => [],
      async run(job, release) {
        started.push(job.id);
        // The first releases its worker at once (its request is over), then takes its time to end.
        if (job.id === '0') {
          release();
          await ending;
        }
      },
      onError: (err) => {
        throw err;
      },
    });
    // One worker, one per endpoint: the second ran, and was completed, while the first was still ending.
    await vi.waitFor(() => expect(settled).toEqual(['1']));
    expect(started).toEqual(['0', '1']);
    const stopped = workers.stop(10_000);
    finish();
    await stopped;
    expect([...settled].sort()).toEqual(['0', '1']);
  });
});

describe('fair workers: fetches that leave endpoints out', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('take at most a tenth of the time (each waits ten times as long as the last took), and still find a new due job', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    // e1's backlog: its two jobs claimed run for ever, so every fetch leaves e1 out, and each such fetch takes 10 ms.
    const { boss, fetches, add } = fakeQueue(Array.from({ length: 20 }, () => ({ account: 1, endpoint: 'e1' })), 10);
    const started: string[] = [];
    const workers = startFairWorkers(
      boss,
      'q',
      { concurrency: 10, perAccount: 10, perGroup: 1, pollMs: 1 },
      {
        excluded: async () => [],
        run: (job) => {
          started.push(String(job.groupId));
          return new Promise<void>(() => {});
        },
        onError: (err) => {
          throw err;
        },
      },
      () => Date.now(),
    );
    await vi.advanceTimersByTimeAsync(1000);
    const leavingOut = fetches.filter((f) => f.ignoreGroups.includes('e1'));
    // 10 ms each, then 100 ms until the next: about 9 in a second (without the spacing, one every 11 ms: about 90).
    expect(leavingOut.length).toBeGreaterThanOrEqual(5);
    expect(leavingOut.length).toBeLessThanOrEqual(11);
    expect(started).toEqual(['e1']);
    // Another endpoint's job, due now: taken by the next such fetch, within 110 ms.
    add({ account: 2, endpoint: 'e2' });
    await vi.advanceTimersByTimeAsync(120);
    expect(started).toEqual(['e1', 'e2']);
    const stopped = workers.stop(10);
    await vi.advanceTimersByTimeAsync(20);
    await stopped;
  });
});
