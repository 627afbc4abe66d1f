import DataLoader from 'dataloader';

/**
 * Single calls that share round trips (DataLoader, with its cache off): a call made while no batch
 * is in flight goes at once (after the current tick, with any made in it); calls made while one is
 * in flight wait for it and then go together, as one batch. An idle caller waits for nobody; busy
 * ones take one statement between them instead of one each. `run` answers each key in order (an
 * Error for a key fails that call only). A batch whose statement fails is run again key by key, so
 * that one bad key (a row deleted meanwhile) fails only its own call.
 */
export function groupCommit<K, V>(run: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>, maxBatchSize = 200): (key: K) => Promise<V> {
  let inFlight: Promise<unknown> = Promise.resolve();
  const loader = new DataLoader<K, V>(
    (keys) => {
      const batch = run(keys).catch((err: Error) =>
        keys.length === 1 ? [err] : Promise.all(keys.map((key) => run([key]).then((answers) => answers[0]!, (e: Error) => e))),
      );
      inFlight = batch.catch(() => {});
      return batch;
    },
    { cache: false, maxBatchSize, batchScheduleFn: (dispatch) => void inFlight.then(() => process.nextTick(dispatch)) },
  );
  return (key) => loader.load(key);
}
