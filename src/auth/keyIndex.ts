import type { KeyChanges } from './apiKeys.js';

/**
 * Changes are read again for this long after they were made: a key's change is stamped with the
 * start of its transaction, which commits a moment later, possibly after a read that began between.
 */
const OVERLAP_MS = 60_000;

/** 52 bits of a SHA-256 (13 hex digits): a JS number, so a million keys take ~37 MB in a Set. */
const prefixOf = (hash: string) => Number.parseInt(hash.slice(0, 13), 16);

/**
 * Every active key of the database, as a prefix of its hash, read again every `intervalMs`
 * from the keys changed since, so that a key nobody issued is refused without asking the
 * database. A key the index lacks may have been issued a moment ago (by the CLI, another
 * instance): it waits for the next refresh rather than costing a lookup of its own, so
 * however many made-up keys arrive, the database sees one small query per interval.
 */
export async function startKeyIndex(changesSince: (since: Date | null) => Promise<KeyChanges>, intervalMs: number) {
  const prefixes = new Set<number>();
  let asOf: Date | null = null;
  /** The refresh that misses are waiting for: the next one to start. */
  let next = pending();

  async function refresh(): Promise<void> {
    const changes = await changesSince(asOf && new Date(asOf.getTime() - OVERLAP_MS));
    for (const hash of changes.active) prefixes.add(prefixOf(hash));
    for (const hash of changes.revoked) prefixes.delete(prefixOf(hash));
    asOf = changes.asOf;
  }

  let running = false;
  async function tick(): Promise<void> {
    if (running) return;
    running = true;
    const waiting = next;
    next = pending();
    await refresh().then(waiting.resolve, waiting.reject);
    running = false;
  }

  await refresh();
  const timer = setInterval(() => void tick(), intervalMs).unref();
  return {
    /** Whether a key with this hash may exist: at once, or after the next refresh (rejects if that fails). */
    async has(hash: string): Promise<boolean> {
      if (prefixes.has(prefixOf(hash))) return true;
      await next.promise;
      return prefixes.has(prefixOf(hash));
    },
    /** A key this process just created: known at once, without waiting for a refresh. */
    add: (hash: string) => void prefixes.add(prefixOf(hash)),
    stop(): void {
      clearInterval(timer);
      next.reject(new Error('the key index is closed'));
    },
  };
}

/** A promise to settle later, which nobody may be waiting for. */
function pending() {
  const p = Promise.withResolvers<void>();
  p.promise.catch(() => {});
  return p;
}
