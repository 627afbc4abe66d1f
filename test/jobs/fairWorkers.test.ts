import type { Job, PgBoss } from 'pg-boss';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planFetches, type Bucket } from '../../src/jobs/fairShare.js';
import { startFairWorkers, type FairWorkers } from '../../src/jobs/fairWorkers.js';

interface Queued { account: string; bucket: number }

/**
 * A queue in memory that fetches as pg-boss does with `minPriority` = `maxPriority`: one bucket's jobs,
 * oldest first, at most `batchSize`, and none past `groupConcurrency` running (counted here, as pg-boss
 * counts active jobs in the database). `discover` answers each bucket with jobs, as the delivery queue's does.
 * `beforeComplete`: runs as each completion begins (an outage throws, a slow database waits); `beforeFetchAnswers`:
 * once a fetch has taken its jobs, before it answers (a round trip still on its way back).
 */
function fakeQueue(
  jobs: Queued[],
  limitOf: (bucket: number) => number = () => 100,
  hooks: { beforeComplete?: () => Promise<void>; beforeFetchAnswers?: () => Promise<void> } = {},
) {
  let next = 0;
  const toJob = (j: Queued) => ({ id: String(next++), groupId: String(j.bucket), data: j, retryCount: 0 }) as unknown as Job<Queued>;
  const waiting = jobs.map(toJob);
  const active = new Map<string, string>();
  const settled: string[] = [];
  const fetches: Array<{ bucket: number; batchSize: number; took: number }> = [];
  const boss = {
    async fetch(_queue: string, opts: { batchSize: number; minPriority: number; maxPriority: number; groupConcurrency: number }) {
      expect(opts.minPriority).toBe(opts.maxPriority);
      const bucket = String(opts.minPriority);
      let inGroup = [...active.values()].filter((g) => g === bucket).length;
      const taken: Array<Job<Queued>> = [];
      for (let i = 0; i < waiting.length && taken.length < opts.batchSize && inGroup < opts.groupConcurrency; ) {
        if (waiting[i]!.groupId !== bucket) i++;
        else {
          const [job] = waiting.splice(i, 1);
          active.set(job!.id, bucket);
          inGroup++;
          taken.push(job!);
        }
      }
      fetches.push({ bucket: opts.minPriority, batchSize: opts.batchSize, took: taken.length });
      await hooks.beforeFetchAnswers?.();
      return taken;
    },
    async complete(_queue: string, attempts: Array<{ id: string }>) {
      await hooks.beforeComplete?.();
      for (const { id } of attempts) (active.delete(id), settled.push(id));
    },
    async fail(_queue: string, attempt: { id: string }) {
      active.delete(attempt.id);
      settled.push(`failed ${attempt.id}`);
    },
  } as unknown as PgBoss;
  const discover = async (): Promise<Bucket[]> => {
    const seen = new Map<number, string>();
    for (const job of waiting) seen.set(job.data.bucket, job.data.account);
    return [...seen].map(([bucket, account]) => ({ bucket, account, limit: limitOf(bucket) }));
  };
  const add = (j: Queued) => waiting.push(toJob(j));
  return { boss, waiting, active, settled, fetches, discover, add };
}

/** Stops workers that run on fake timers: their stop waits out a timer of 10 ms. */
async function stopFaked(workers: FairWorkers) {
  const stopped = workers.stop(10);
  await vi.advanceTimersByTimeAsync(20);
  await stopped;
}

const noHandBack = async () => {
  throw new Error('nothing should be handed back');
};
const raise = (err: Error) => {
  throw err;
};

describe('planFetches: max-min shares of free workers by worker-time', () => {
  const load = (running: Record<string, number>, usage: Record<string, number>, buckets: Record<number, number> = {}) => ({
    running: { accounts: new Map(Object.entries(running)), buckets: new Map(Object.entries(buckets).map(([b, n]) => [Number(b), n])) },
    usage: new Map(Object.entries(usage)),
    estimate: () => 10,
  });
  const shares = { concurrency: 64, reserve: 4, perAccount: 64 };
  const bucketsOf = (accounts: number, perAccount: number, limit = 8) =>
    Array.from({ length: accounts * perAccount }, (_, i): Bucket => ({ bucket: i + 1, account: `a${Math.floor(i / perAccount)}`, limit }));
  const perAccount = (plan: Map<number, number>, buckets: Bucket[]) => {
    const out: Record<string, number> = {};
    for (const [bucket, n] of plan) {
      const account = buckets.find((b) => b.bucket === bucket)!.account;
      out[account] = (out[account] ?? 0) + n;
    }
    return out;
  };

  for (const k of [1, 2, 3, 10]) {
    it(`${k} account(s) with 16 endpoints each and nothing running: the free workers are shared evenly, all but the reserve (one per account and one more, at least 4)`, () => {
      const buckets = bucketsOf(k, 16);
      const plan = perAccount(planFetches(64, buckets, load({}, {}), shares), buckets);
      const counts = Object.values(plan);
      expect(counts).toHaveLength(k);
      // The reserve's workers go to accounts running none: each of these took one before the line, so none of it.
      expect(counts.reduce((a, b) => a + b, 0)).toBe(64 - Math.max(4, k + 1));
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    });

    it(`${k} busy account(s) holding all but the reserve: a newcomer gets the reserve at once, the busy ones nothing more`, () => {
      const buckets = [...bucketsOf(k, 16), { bucket: 9999, account: 'newcomer', limit: 8 }];
      const running: Record<string, number> = {};
      const usage: Record<string, number> = {};
      for (let i = 0; i < k; i++) {
        running[`a${i}`] = Math.floor(60 / k);
        usage[`a${i}`] = 9000 * Math.floor(60 / k);
      }
      // Each set of busy accounts holds 60, leaving exactly the reserve.
      const busy = Object.values(running).reduce((a, b) => a + b, 0);
      const plan = planFetches(64 - busy, buckets, load(running, usage), shares);
      expect(plan.get(9999)).toBeGreaterThanOrEqual(1);
      // Every busy account runs some already, so none takes a reserved worker; the newcomer, running none, takes one,
      // and the rest stay for the next ones.
      expect(perAccount(plan, buckets)).toEqual({ newcomer: 1 });
    });
  }

  it('charges worker-time: of two accounts, the one that has used less gets the free worker, whatever order their jobs came in', () => {
    const buckets: Bucket[] = [{ bucket: 1, account: 'slow', limit: 8 }, { bucket: 2, account: 'fast', limit: 8 }];
    const plan = planFetches(1, buckets, load({ slow: 2, fast: 2 }, { slow: 18_000, fast: 40 }), { ...shares, reserve: 0 });
    expect([...plan]).toEqual([[2, 1]]);
  });

  it("an account idle until now starts level with the least-served busy one: no credit saved while idle", () => {
    const buckets: Bucket[] = [{ bucket: 1, account: 'busy', limit: 64 }, { bucket: 2, account: 'back', limit: 64 }];
    // 'back' used nothing for a long time; 'busy' has used 100 s. Ten free workers are shared, not all given to 'back'.
    const plan = perAccount(planFetches(10, buckets, load({ busy: 1 }, { busy: 100_000, back: 0 }), { ...shares, reserve: 0 }), buckets);
    expect(plan).toEqual({ back: 5, busy: 5 });
  });

  it("never plans past a bucket's limit (what may run across the fleet), nor past perAccount", () => {
    const buckets: Bucket[] = [{ bucket: 1, account: 'a', limit: 3 }, { bucket: 2, account: 'a', limit: 0 }, { bucket: 3, account: 'b', limit: 8 }];
    const plan = planFetches(64, buckets, load({ a: 1 }, {}, { 1: 1 }), { concurrency: 64, reserve: 0, perAccount: 5 });
    expect(Object.fromEntries(plan)).toEqual({ 1: 2, 3: 5 });
  });
});

describe('fair workers: one fetch per bucket, by priority', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs every job once, never more of a bucket than its limit at once, and fetches each bucket by itself', async () => {
    const jobs: Queued[] = [
      ...Array.from({ length: 20 }, (_, i): Queued => ({ account: 'a1', bucket: 1 + (i % 2) })),
      ...Array.from({ length: 10 }, (): Queued => ({ account: 'a2', bucket: 3 })),
    ];
    const queue = fakeQueue(jobs, () => 2);
    const peak = new Map<number, number>();
    const now = new Map<number, number>();
    const running: Array<() => void> = [];
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 6, reserve: 0, perAccount: 6, pollMs: 1 }, {
      discover: queue.discover,
      run: (job) =>
        new Promise<void>((resolve) => {
          const b = job.data.bucket;
          now.set(b, (now.get(b) ?? 0) + 1);
          peak.set(b, Math.max(peak.get(b) ?? 0, now.get(b)!));
          running.push(() => {
            now.set(b, now.get(b)! - 1);
            resolve();
          });
        }),
      handBack: noHandBack,
      onError: raise,
    });
    await vi.waitFor(() => expect(running.length).toBe(6));
    while (queue.settled.length < jobs.length) {
      for (const release of running.splice(0)) release();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await workers.stop(1000);
    expect([...queue.settled].sort()).toEqual(jobs.map((_, i) => String(i)).sort());
    expect(Object.fromEntries(peak)).toEqual({ 1: 2, 2: 2, 3: 2 });
    expect(queue.fetches.every((f) => f.batchSize <= 2)).toBe(true);
  });

  it("an account whose jobs hold their workers for seconds leaves the others a worker at once: a newcomer's job starts within one look", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    // Three hostile accounts, 16 buckets each, 10 jobs a bucket: every job runs 9 s.
    const jobs: Queued[] = [];
    for (let a = 0; a < 3; a++) for (let b = 0; b < 16; b++) for (let i = 0; i < 10; i++) jobs.push({ account: `h${a}`, bucket: a * 100 + b });
    const queue = fakeQueue(jobs, () => 8);
    const started: Array<{ account: string; at: number }> = [];
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 64, reserve: 4, perAccount: 64, pollMs: 100 }, {
      discover: queue.discover,
      run: (job) => {
        started.push({ account: job.data.account, at: Date.now() });
        return new Promise<void>((resolve) => setTimeout(resolve, job.data.account === 'victim' ? 20 : 9000));
      },
      handBack: noHandBack,
      onError: raise,
    });
    await vi.advanceTimersByTimeAsync(3000);
    const hostile = started.length;
    expect(hostile).toBe(60);
    // Each hostile account holds 20 of the 60.
    expect(['h0', 'h1', 'h2'].map((a) => started.filter((s) => s.account === a).length)).toEqual([20, 20, 20]);
    queue.add({ account: 'victim', bucket: 999 });
    const addedAt = Date.now();
    await vi.advanceTimersByTimeAsync(250);
    const victim = started.filter((s) => s.account === 'victim');
    expect(victim).toHaveLength(1);
    expect(victim[0]!.at - addedAt).toBeLessThanOrEqual(100);
    await stopFaked(workers);
  });

  it('an ended job whose completion fails (the database unreachable) is completed once it can be, not left active to hold its bucket', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    let outage = true;
    let refused = 0;
    const queue = fakeQueue([{ account: 'a', bucket: 1 }], () => 1, {
      async beforeComplete() {
        if (outage) {
          refused++;
          throw new Error('connection refused');
        }
      },
    });
    const errors: string[] = [];
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 2, reserve: 0, perAccount: 2, pollMs: 100 }, {
      discover: queue.discover,
      run: async () => {},
      handBack: noHandBack,
      onError: (err) => void errors.push(err.message),
    });
    // The job ran and ended; no claim of its bucket follows (nothing else is due), so it is settled on its own, and fails.
    await vi.advanceTimersByTimeAsync(1000);
    expect(queue.active.size).toBe(1);
    expect(refused).toBeGreaterThanOrEqual(2);
    outage = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect([queue.settled, queue.active.size]).toEqual([['0'], 0]);
    expect(new Set(errors)).toEqual(new Set(['connection refused']));
    expect(errors.length).toBe(refused);
    await stopFaked(workers);
  });

  it('jobs queued in a bucket known from the last look are fetched at once without another look; a new bucket is looked for', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    const queue = fakeQueue([{ account: 'a', bucket: 1 }]);
    let looks = 0;
    const ran: number[] = [];
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 4, reserve: 0, perAccount: 4, pollMs: 10_000 }, {
      discover: () => (looks++, queue.discover()),
      run: async (job) => void ran.push(job.data.bucket),
      handBack: noHandBack,
      onError: raise,
    });
    await vi.advanceTimersByTimeAsync(50);
    expect([looks, ran]).toEqual([1, [1]]);
    queue.add({ account: 'a', bucket: 1 });
    workers.lookNow([1]);
    await vi.advanceTimersByTimeAsync(50);
    expect([looks, ran]).toEqual([1, [1, 1]]);
    queue.add({ account: 'b', bucket: 2 });
    workers.lookNow([2]);
    await vi.advanceTimersByTimeAsync(50);
    expect([looks, ran]).toEqual([2, [1, 1, 2]]);
    await stopFaked(workers);
  });

  it('jobs queued while a fetch of their bucket is on its way back are fetched when it answers short, not at the next look', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    let answer!: () => void;
    let gate: Promise<void> | undefined = new Promise<void>((resolve) => (answer = resolve));
    const queue = fakeQueue([{ account: 'a', bucket: 1 }], () => 100, { beforeFetchAnswers: async () => gate });
    let looks = 0;
    const ran: Array<{ id: string; at: number }> = [];
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 4, reserve: 0, perAccount: 4, pollMs: 10_000 }, {
      discover: () => (looks++, queue.discover()),
      // The jobs hold their workers: no job ending clears the bucket for another fetch.
      run: (job) => (ran.push({ id: job.id, at: Date.now() }), held),
      handBack: noHandBack,
      onError: raise,
    });
    // The first fetch asked for 4 and took the one job due; before it answers, another is queued and named.
    await vi.advanceTimersByTimeAsync(5);
    expect(queue.fetches).toEqual([{ bucket: 1, batchSize: 4, took: 1 }]);
    queue.add({ account: 'a', bucket: 1 });
    workers.lookNow([1]);
    const queuedAt = Date.now();
    gate = undefined;
    answer();
    await vi.advanceTimersByTimeAsync(50);
    expect(looks).toBe(1);
    expect(ran.map((r) => r.id)).toEqual(['0', '1']);
    expect(ran[1]!.at - queuedAt).toBeLessThan(50);
    // Short again, with no nudge since it began: the bucket is left until the next look.
    const fetched = queue.fetches.length;
    await vi.advanceTimersByTimeAsync(1000);
    expect(queue.fetches.length).toBe(fetched);
    finish();
    await stopFaked(workers);
  });

  it('a bucket whose ended jobs are being settled on their own is not claimed until they are: no fetch finds its group full', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    let completing = 0;
    const queue = fakeQueue([{ account: 'a', bucket: 1 }], () => 1, {
      async beforeComplete() {
        completing++;
        await gate;
      },
    });
    const ran: string[] = [];
    // Looks every 1 ms, and a job runs 10: by the time the first ends, its bucket has nothing due, so no claim settles it.
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 2, reserve: 0, perAccount: 2, pollMs: 1 }, {
      discover: queue.discover,
      run: (job) => (ran.push(job.id), new Promise<void>((resolve) => setTimeout(resolve, 10))),
      handBack: noHandBack,
      onError: raise,
    });
    // The first job ended with nothing else due: it is settled on its own, and its completion hangs.
    await vi.advanceTimersByTimeAsync(100);
    expect([ran, completing, queue.active.size]).toEqual([['0'], 1, 1]);
    queue.add({ account: 'a', bucket: 1 });
    workers.lookNow([1]);
    await vi.advanceTimersByTimeAsync(100);
    // Its group is full in the queue until the completion lands: no fetch of it meanwhile.
    expect([ran, queue.fetches.length]).toEqual([['0'], 1]);
    answer();
    await vi.advanceTimersByTimeAsync(100);
    expect(ran).toEqual(['0', '1']);
    expect(queue.fetches.slice(0, 2).map((f) => f.took)).toEqual([1, 1]);
    await stopFaked(workers);
  });

  it('stop hands back the jobs a fetch claims as it stops (no fail, so no retry counted) and waits for the running one', async () => {
    const queue = fakeQueue([{ account: 'a', bucket: 1 }, { account: 'b', bucket: 2 }]);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    const realFetch = queue.boss.fetch.bind(queue.boss);
    // Bucket 2's fetch is under way when stop begins, and answers after it.
    (queue.boss as unknown as { fetch: typeof realFetch }).fetch = (async (name: string, opts: { minPriority: number }) => {
      if (opts.minPriority === 2) await gate;
      return realFetch(name, opts as never);
    }) as typeof realFetch;
    const handedBack: string[] = [];
    const workers = startFairWorkers<Queued>(queue.boss, 'q', { concurrency: 4, reserve: 0, perAccount: 4, pollMs: 1 }, {
      discover: queue.discover,
      run: () => held,
      handBack: async (jobs, bucket) => void handedBack.push(...jobs.map((j) => `${j.id} to bucket ${bucket}`)),
      onError: raise,
    });
    await vi.waitFor(() => expect(queue.active.size).toBe(1));
    const stopped = workers.stop(10_000);
    answer();
    await vi.waitFor(() => expect(handedBack).toEqual(['1 to bucket 2']));
    release();
    await stopped;
    expect(queue.settled).toEqual(['0']);
  });
});

describe('groupCommit: a batch that cannot be settled whole is settled key by key', () => {
  it('one bad key fails its own call only; the others get their answers', async () => {
    const { groupCommit } = await import('../../src/db/groupCommit.js');
    const statements: number[][] = [];
    const settle = groupCommit<number, string>(async (keys) => {
      statements.push([...keys]);
      if (keys.includes(13)) throw new Error('violates foreign key constraint');
      return keys.map((k) => `settled ${k}`);
    });
    const answers = await Promise.allSettled([1, 2, 13, 4].map((k) => settle(k)));
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual(['settled 1', 'settled 2', 'violates foreign key constraint', 'settled 4']);
    // One statement for all four, then one each.
    expect(statements).toEqual([[1, 2, 13, 4], [1], [2], [13], [4]]);
  });
});

describe('endpointLimits: adaptive concurrency per endpoint', () => {
  it('halves on a failure or a slow success, grows by one on a prompt success, between 1 and the bound', async () => {
    const { endpointLimits } = await import('../../src/webhooks/endpointLimits.js');
    const limits = endpointLimits(8, 1000);
    const trace = (steps: Array<{ ok: boolean; durationMs: number }>) => steps.map((step) => (limits.record(7, step), limits.of(7)));
    const slow = { ok: true, durationMs: 9000 };
    const prompt = { ok: true, durationMs: 20 };
    const timeout = { ok: false, durationMs: 10_000 };
    const failedFast = { ok: false, durationMs: 5 };
    expect(trace([slow, slow, slow, slow])).toEqual([4, 2, 1, 1]);
    // Alternating instant successes and timeouts: stays at one or two.
    expect(trace([prompt, timeout, prompt, timeout, prompt, timeout])).toEqual([2, 1, 2, 1, 2, 1]);
    expect(trace([failedFast])).toEqual([1]);
    expect(trace(Array.from({ length: 9 }, () => prompt))).toEqual([2, 3, 4, 5, 6, 7, 8, 8, 8]);
    // Other endpoints keep the whole bound.
    expect(limits.of(8)).toBe(8);
  });
});
