import { Cluster, Redis } from 'ioredis';
import { parseRedisUrl } from './redisUrl.js';

/** Every hash slot of a Redis Cluster. */
const SLOTS = 16_384;

/** Reconnect attempts: 100 ms more each time, at most a second apart. */
const backoff = (attempt: number) => Math.min(attempt * 100, 1000);

/** The client of REDIS_URL (one node or a cluster) and how to tell whether it answers. */
export interface RedisConnection {
  kind: 'node' | 'cluster';
  client: Redis | Cluster;
  /**
   * Resolves if Redis answers: a node, a PING; a cluster, every master of the slot map,
   * each saying cluster_state:ok, so one master down is never reported as "answers".
   */
  check(): Promise<void>;
}

/** Connects to REDIS_URL with settings that fail fast: the store, not ioredis, decides what waits. */
export function connectRedis(url: string, { timeoutMs }: { timeoutMs: number }): RedisConnection {
  const perCommand = {
    commandTimeout: Math.max(1000, timeoutMs * 4), // frees commands stuck behind a hung server
    maxRetriesPerRequest: 0,
  };
  const target = parseRedisUrl(url);
  if (target.kind === 'node') {
    const client = new Redis(url, {
      ...perCommand,
      enableOfflineQueue: false, // fail at once while disconnected instead of queueing requests
      retryStrategy: backoff,
      // Hits of concurrent requests issued in the same tick go to Redis as one pipeline: one write, one read.
      enableAutoPipelining: true,
    });
    return {
      kind: 'node',
      client,
      check: () => client.ping().then(() => {}),
    };
  }
  const client = new Cluster(target.nodes, {
    enableOfflineQueue: false,
    enableAutoPipelining: true, // one pipeline per master and tick
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
    kind: 'cluster',
    client,
    check: () =>
      checkCluster(client).catch((err: unknown) => {
        // A master that does not answer may have been replaced (failover): ask for the slot map now, not in 5 s.
        if (client.status === 'ready') client.refreshSlotsCache();
        throw err;
      }),
  };
}

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
