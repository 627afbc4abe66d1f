/**
 * A bucket of due jobs: the jobs of one group (a webhook endpoint), which the queue gives a
 * priority of their own so that a fetch takes exactly one bucket's jobs (fairWorkers.ts).
 */
export interface Bucket {
  /** The jobs' priority, which is the bucket's number. */
  bucket: number;
  /** The account the bucket's jobs serve: its share is charged for the time they hold. */
  account: string;
  /** How many of its jobs may be running at once across every instance (0: none now). */
  limit: number;
}

/** What this instance is running now. */
export interface Load {
  /** Jobs running, by account and by bucket. */
  running: { accounts: ReadonlyMap<string, number>; buckets: ReadonlyMap<number, number> };
  /** Worker-time each account has used (ms), the time of jobs still running included. */
  usage: ReadonlyMap<string, number>;
  /** What one more job of an account is expected to cost (ms): its recent jobs' mean. */
  estimate: (account: string) => number;
}

/**
 * Max-min fair shares of free workers, charged by worker-time (start-time fair queueing over
 * accounts): each free worker goes to the account that has used the least worker-time, then to that
 * account's bucket with the fewest running, and each pick charges the account its estimate.
 *
 * The last free workers are a reserve, one for each account with work here and one more (at least
 * `reserve`, at most a quarter of `concurrency`; none when `reserve` is 0), and each of them goes only to an account running
 * nothing here: a newcomer, or an account that delivers little, finds a worker at once however long the
 * others' jobs hold theirs (a worker cannot be taken back from a job under way), and however many
 * accounts arrive at once, each takes one, leaving one for the next. Answers how many jobs to take from
 * each bucket.
 */
export function planFetches(
  free: number,
  candidates: readonly Bucket[],
  load: Load,
  shares: { concurrency: number; reserve: number; perAccount: number },
): Map<number, number> {
  const planned = new Map<number, number>();
  const plannedOf = new Map<string, number>();
  const score = new Map<string, number>();
  const bucketsOf = new Map<string, Bucket[]>();
  for (const c of candidates) bucketsOf.set(c.account, [...(bucketsOf.get(c.account) ?? []), c]);
  const accounts = [...bucketsOf.keys()];
  const active = new Set([...accounts, ...load.running.accounts.keys()]).size;
  const reserve = shares.reserve === 0 ? 0 : Math.min(Math.max(shares.reserve, active + 1), Math.floor(shares.concurrency / 4));
  const runningOf = (account: string) => (load.running.accounts.get(account) ?? 0) + (plannedOf.get(account) ?? 0);
  const inBucket = (b: Bucket) => (load.running.buckets.get(b.bucket) ?? 0) + (planned.get(b.bucket) ?? 0);
  // An account that had nothing running starts level with the least-served busy one: no credit saved up while idle.
  const busy = [...load.running.accounts.keys()].map((a) => load.usage.get(a) ?? 0);
  const floor = busy.length > 0 ? Math.min(...busy) : 0;
  for (const account of accounts) score.set(account, Math.max(load.usage.get(account) ?? 0, load.running.accounts.has(account) ? 0 : floor));

  for (let left = free; left > 0; left--) {
    let best: { account: string; bucket: Bucket } | undefined;
    for (const account of accounts) {
      const n = runningOf(account);
      if (n >= shares.perAccount || (left <= reserve && n > 0)) continue;
      const open = bucketsOf.get(account)!.filter((c) => inBucket(c) < c.limit);
      if (open.length === 0) continue;
      if (best) {
        const [mine, theirs] = [score.get(account)!, score.get(best.account)!];
        if (mine > theirs || (mine === theirs && n >= runningOf(best.account))) continue;
      }
      best = { account, bucket: open.reduce((least, c) => (inBucket(c) < inBucket(least) ? c : least)) };
    }
    if (!best) break;
    planned.set(best.bucket.bucket, (planned.get(best.bucket.bucket) ?? 0) + 1);
    plannedOf.set(best.account, (plannedOf.get(best.account) ?? 0) + 1);
    score.set(best.account, score.get(best.account)! + load.estimate(best.account));
  }
  return planned;
}
