import type { Job, PgBoss } from 'pg-boss';
import { describe, expect, it } from 'vitest';
import { startFairWorkers, type AccountJob } from '../../src/jobs/fairWorkers.js';

/** A queue in memory that fetches as pg-boss does: oldest first, leaving out `ignoreGroups`, at most `batchSize`. */
function fakeQueue(jobs: Array<{ account: number; endpoint: string }>) {
  const waiting = jobs.map((j, i) => ({ id: String(i), groupId: j.endpoint, data: { accountId: j.account }, retryCount: 0 }) as unknown as Job<AccountJob>);
  const settled: string[] = [];
  const boss = {
    async fetch(_queue: string, opts: { batchSize: number; ignoreGroups: string[] }) {
      const taken: Array<Job<AccountJob>> = [];
      for (let i = 0; i < waiting.length && taken.length < opts.batchSize; ) {
        if (opts.ignoreGroups.includes(waiting[i]!.groupId!)) i++;
        else taken.push(...waiting.splice(i, 1));
      }
      return taken;
    },
    async complete(_queue: string, attempt: { id: string }) {
      settled.push(attempt.id);
    },
    async fail(_queue: string, attempts: { id: string } | Array<{ id: string }>) {
      for (const attempt of [attempts].flat()) settled.push(`failed ${attempt.id}`);
    },
  } as unknown as PgBoss;
  return { boss, waiting, settled };
}

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
    const settle = async () => {
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await settle();
    // Account 1 holds its share (3: two to e1, one to e2) and account 2 its endpoint's (2), though its jobs were due last.
    expect([byKey.get('account 1'), byKey.get('endpoint e1'), byKey.get('endpoint e2'), byKey.get('account 2')]).toEqual([3, 2, 1, 2]);
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
    expect([settled, waiting.length]).toEqual([['0', 'failed 1'], 1]);
  });
});
