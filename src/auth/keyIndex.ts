import type { KeyChanges } from './keyStore.js';

/** 52 bits of a SHA-256 (13 hex digits): a JS number, so a million keys take ~37 MB in a Set. */
const prefixOf = (hash: string) => Number.parseInt(hash.slice(0, 13), 16);

/**
 * Every key the database has issued, as a prefix of its hash, so that a key nobody issued is
 * refused without asking the database. Read again every `intervalMs`, only the keys of
 * transactions the last read could not see (a bulk insert is read once). A
 * revoked key's prefix stays: another key may share it, and revocation is the lookup's to
 * enforce (the key cache's ttl bounds it). A key the index lacks may have been issued a
 * moment ago (by the CLI, another instance): it waits for the next refresh rather than costing a lookup of its own, so
 * however many made-up keys arrive, the database sees one small query per interval.
 */
export async function startKeyIndex(changesSince: (since: string | null) => Promise<KeyChanges>, intervalMs: number) {
  const prefixes = new Set<number>();
  let since: string | null = null;
  /** The refresh that misses are waiting for, the next one to start: its error, if it fails. */
  let next = Promise.withResolvers<Error | undefined>();

  async function refresh(): Promise<void> {
    const changes = await changesSince(since);
    for (const prefix of changes.active) prefixes.add(prefixOf(prefix));
    since = changes.snapshot;
  }

  let running = false;
  async function tick(): Promise<void> {
    if (running) return;
    running = true;
    const waiting = next;
    next = Promise.withResolvers();
    await refresh().then(() => waiting.resolve(undefined), waiting.resolve);
    running = false;
  }

  await refresh();
  const timer = setInterval(() => void tick(), intervalMs).unref();
  return {
    /** Whether a key with this hash may exist: at once, or after the next refresh (rejects if that fails). */
    async has(hash: string): Promise<boolean> {
      if (prefixes.has(prefixOf(hash))) return true;
      const failed = await next.promise;
      if (failed) throw failed;
      return prefixes.has(prefixOf(hash));
    },
    /** A key this process just created: known at once, without waiting for a refresh. */
    add: (hash: string) => void prefixes.add(prefixOf(hash)),
    stop(): void {
      clearInterval(timer);
      next.resolve(new Error('the key index is closed'));
    },
  };
}
