/**
 * When each key was last used, kept in memory and written in one statement every `intervalMs`
 * (and at close): a request never waits on a write, and a busy key costs one row update a minute.
 */
export function startKeyUsage(record: (uses: Map<number, number>) => Promise<void>, intervalMs: number, onError: (err: Error) => void) {
  let uses = new Map<number, number>();
  async function flush(): Promise<void> {
    if (uses.size === 0) return;
    const batch = uses;
    uses = new Map();
    // A failed write is dropped, not retried: the next use of each key records it again.
    await record(batch).catch(onError);
  }
  const timer = setInterval(() => void flush(), intervalMs).unref();
  return {
    /** Key `id` was used at `at` (ms since the epoch). */
    seen: (id: number, at: number) => void uses.set(id, at),
    flush,
    async stop(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}
