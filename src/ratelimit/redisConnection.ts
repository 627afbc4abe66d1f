import { Cluster, Redis } from 'ioredis';
import { parseRedisUrl } from '../configParts/redisUrl.js';

const SLOTS = 16_384;

/** Reconnect attempts, at most a second apart. */
const backoff = (attempt: number) => Math.min(attempt * 100, 1000);

/**
 * Connects to REDIS_URL (one node or a cluster) with settings that fail fast: the store, not
 * ioredis, decides what waits. `check()` resolves if Redis answers: a node, a PING; a cluster,
 * every master of the slot map, each saying cluster_state:ok, so one master down is never
 * reported as "answers".
 */
export function connectRedis(url: string, { timeoutMs }: { timeoutMs: number }) {
  const failFast = {
    enableOfflineQueue: false, // fail at once while disconnected instead of queueing requests
    // Hits of concurrent requests issued in the same tick go to Redis as one pipeline (per master): one write, one read.
    enableAutoPipelining: true,
  };
  const perCommand = {
    commandTimeout: Math.max(1000, timeoutMs * 4), // frees commands stuck behind a hung server
    maxRetriesPerRequest: 0,
  };
  const target = parseRedisUrl(url);
  if (target.kind === 'node') {
    const client = new Redis(url, { ...failFast, ...perCommand, retryStrategy: backoff });
    return { kind: 'node' as const, client, check: () => client.ping().then(() => {}) };
  }
  const client = new Cluster(target.nodes, {
    ...failFast,
    scaleReads: 'master', // the script reads and writes: replicas never serve it
    clusterRetryStrategy: backoff, // no seed reachable: keep trying
    // A master that restarts on its address is reconnected, rather than dropped until a MOVED.
    clusterNodeRetryStrategy: backoff,
    slotsRefreshTimeout: perCommand.commandTimeout,
    redisOptions: {
      ...perCommand,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
    },
  });
  return {
    kind: 'cluster' as const,
    client,
    check: () =>
      checkCluster(client).catch((err: unknown) => {
        // A master that does not answer may have been replaced (failover): ask for the slot map now, not in 5 s.
        if (client.status === 'ready') client.refreshSlotsCache();
        throw err;
      }),
  };
}

export type RedisConnection = ReturnType<typeof connectRedis>;

/** Asks every master that holds slots for CLUSTER INFO; also opens their (lazy) connections. */
async function checkCluster(cluster: Cluster): Promise<void> {
  if (cluster.status !== 'ready') throw new Error(`Redis Cluster connection ${cluster.status}`);
  const masters = new Set(Array.from({ length: SLOTS }, (_, slot) => cluster.slots[slot]?.[0]));
  const connections = new Map(cluster.nodes('master').map((node) => [`${node.options.host}:${node.options.port}`, node]));
  await Promise.all(
    [...masters].map(async (master) => {
      const node = master && connections.get(master);
      if (!node) throw new Error(master ? `no connection to Redis Cluster master ${master}` : 'a Redis Cluster slot has no master');
      const info = await node.cluster('INFO');
      if (!/^cluster_state:ok\s*$/m.test(String(info))) throw new Error(`Redis Cluster master ${master}: cluster_state not ok`);
    }),
  );
}
