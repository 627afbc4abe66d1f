/** What the database says changed among the keys since a time (the database's own clock). */
export interface KeyChanges {
  /** The database's now() when read: the next read asks for changes since (a margin before) this. */
  asOf: Date;
  /** Hashes (hex) of keys created or changed and active. */
  active: string[];
  /** Hashes (hex) of keys revoked. */
  revoked: string[];
}

export interface KeyIndexOptions {
  /** Reads key changes since `since` (every key when null). */
  changesSince(since: Date | null): Promise<KeyChanges>;
  /** How often the index is brought up to date. */
  intervalMs: number;
  /** A refresh failed (the database is down): called once per run of failures, on the first. */
  onFailing(err: unknown): void;
  /** Refreshes work again after `failures` failed ones. */
  onRecovered(failures: number): void;
}

/**
 * Changes are read again for this long after they were made: a key's change is stamped with the
 * start of its transaction, which commits a moment later, possibly after a read that began between.
 */
const OVERLAP_MS = 60_000;

/** 52 bits of a SHA-256 (13 hex digits): a JS number, so a million keys take ~37 MB in a Set. */
const prefixOf = (hash: string) => Number.parseInt(hash.slice(0, 13), 16);

/**
 * Every active key of the database, as a prefix of its hash, so that a key nobody issued is
 * refused without asking the database: a flood of made-up keys costs a hash and a Set lookup.
 * A key the index lacks may have been issued a moment ago (by the CLI, another instance): such a
 * key waits for the next refresh (at most `intervalMs`) rather than costing a lookup of its own,
 * so however many made-up keys arrive, the database sees one small query per interval.
 * A chance match of a made-up key (2^-52 per key issued) only costs it a database lookup.
 */
export function createKeyIndex(opts: KeyIndexOptions) {
  const prefixes = new Set<number>();
  let asOf: Date | null = null;
  let failures = 0;
  let running: Promise<void> | undefined;
  /** Misses waiting for a refresh that starts after they arrived. */
  let waiting: Array<{ resolve(): void; reject(err: unknown): void }> = [];

  async function refresh(): Promise<void> {
    const since = asOf && new Date(asOf.getTime() - OVERLAP_MS);
    const changes = await opts.changesSince(since);
    for (const hash of changes.active) prefixes.add(prefixOf(hash));
    for (const hash of changes.revoked) prefixes.delete(prefixOf(hash));
    asOf = changes.asOf;
  }

  /** One refresh at a time; the misses that arrived before it started learn its outcome. */
  function tick(): Promise<void> {
    if (running) return running;
    const waiters = waiting;
    waiting = [];
    running = refresh().then(
      () => {
        if (failures > 0) opts.onRecovered(failures);
        failures = 0;
        for (const w of waiters) w.resolve();
      },
      (err: unknown) => {
        if (failures++ === 0) opts.onFailing(err);
        for (const w of waiters) w.reject(err);
      },
    );
    running = running.finally(() => (running = undefined));
    return running;
  }

  let timer: NodeJS.Timeout | undefined;
  return {
    /** Loads every key, then keeps the index current every `intervalMs`. */
    async start(): Promise<void> {
      await refresh();
      timer = setInterval(() => void tick(), opts.intervalMs).unref();
    },
    /** Whether a key with this hash may exist (false: it certainly does not, as of the last refresh). */
    mayExist(hash: string): boolean {
      return prefixes.has(prefixOf(hash));
    },
    /** A key this process just created: known at once, without waiting for a refresh. */
    add(hash: string): void {
      prefixes.add(prefixOf(hash));
    },
    /** Resolves after the next refresh that starts from now has succeeded; rejects if it fails. */
    nextRefresh(): Promise<void> {
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
    },
    size: () => prefixes.size,
    stop(): void {
      clearInterval(timer);
      for (const w of waiting) w.reject(new Error('the key index is closed'));
      waiting = [];
    },
  };
}

export type KeyIndex = ReturnType<typeof createKeyIndex>;
