import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Redis } from 'ioredis';
import { forget, remember } from './cleanup.js';
import { waitFor } from './poll.js';
import { canConnect, freePort } from './ports.js';
import { stop } from './processes.js';
import { scratchDir } from './scratchDir.js';

/** One redis-server of the cluster. Its role can change (failover); its port and nodes.conf do not. */
export interface RedisClusterNode {
  port: number;
  running(): boolean;
  /** SIGTERM (a shutdown: Redis writes nodes.conf and exits) and wait until it is gone. */
  stop(): Promise<void>;
  /** SIGKILL and wait until it is gone: an outage. Keeps nodes.conf, loses the data (no persistence). */
  kill(): Promise<void>;
  /** SIGSTOP: it hangs with its sockets open (its peers mark it failing after the node timeout). */
  hang(): void;
  /** SIGCONT after hang(). */
  resume(): void;
  /** Starts it again on its ports with its nodes.conf: it rejoins with its slots (or as a replica after a failover). */
  restart(): Promise<void>;
  /** A plain (non-cluster) client of this node alone, for CLUSTER and INFO commands; the caller disconnects it. */
  connect(): Redis;
}

export interface RedisCluster {
  /** REDIS_URL for the service: redis+cluster://127.0.0.1:port,… (every node as a seed). */
  url: string;
  /** Masters first, in slot order as created; then replicas. */
  nodes: RedisClusterNode[];
  /** The running node that serves `slot` as master now (asked of the cluster, so it follows failovers). */
  masterOf(slot: number): Promise<RedisClusterNode>;
  /** The slot of `key`, as the cluster computes it (CLUSTER KEYSLOT). */
  keySlot(key: string): Promise<number>;
  /** Until every running node says cluster_state:ok (and replicas are in sync); false after `timeoutMs`. */
  waitUntilOk(timeoutMs?: number): Promise<boolean>;
  /** Until every node but `lost` says cluster_state:fail (it was marked failing after the node timeout); false after `timeoutMs`. */
  waitUntilFailed(lost: RedisClusterNode, timeoutMs?: number): Promise<boolean>;
  /** Kills every node and deletes its directory. */
  stop(): Promise<void>;
}

export interface RedisClusterOptions {
  masters?: number;
  /** Replicas of each master: 1 for failover tests. */
  replicas?: number;
  /** cluster-node-timeout: how long a silent node takes to be marked failing (Redis's default is 15 s). */
  nodeTimeoutMs?: number;
}

const alive = (child: ChildProcess | undefined) => child !== undefined && child.exitCode === null && child.signalCode === null;

/** Runs redis-cli with `args`; rejects with its output when it fails. */
function redisCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('redis-cli', args, { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`redis-cli ${args.join(' ')}: ${err.message}\n${stdout}${stderr}`)) : resolve(stdout),
    ),
  );
}

/** Asks the node at `port` one question over a short-lived connection; undefined if it does not answer. */
async function ask<T>(port: number, question: (redis: Redis) => Promise<T>): Promise<T | undefined> {
  const redis = new Redis(port, '127.0.0.1', { lazyConnect: true, connectTimeout: 1000, commandTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await question(redis);
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

/**
 * A real Redis Cluster of Debian's redis-server (7.x) and `redis-cli --cluster create`, on free
 * ports of 127.0.0.1 (the bus port chosen too, not port + 10000) with a scratch directory for
 * the nodes.conf files; no persistence. Resolves once every node says cluster_state:ok.
 */
export async function startRedisCluster({ masters = 3, replicas = 0, nodeTimeoutMs = 1000 }: RedisClusterOptions = {}): Promise<RedisCluster> {
  const dir = await scratchDir('as-redis-cluster-');
  const children = new Map<number, ChildProcess>();
  // The test process may die without calling stop(): leave no server behind.
  const onExit = () => {
    for (const child of children.values()) if (alive(child)) child.kill('SIGKILL'); // also ends a stopped (hung) one
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  async function start(port: number, busPort: number): Promise<void> {
    const log = path.join(dir, `${port}.log`);
    // The same arguments on every restart: same ports, same nodes.conf, so the same node.
    const child = spawn(
      'redis-server',
      [
        '--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`),
        '--cluster-node-timeout', String(nodeTimeoutMs), '--dir', dir, '--logfile', log,
        '--save', '', '--appendonly', 'no',
        '--repl-diskless-sync-delay', '0', // replicas sync at once, not after Redis's 5 s wait for more
        '--set-proc-title', 'no', // a title would overwrite its environment, where a test run marks its processes
      ],
      { stdio: 'ignore' },
    );
    children.set(port, child);
    const up = await waitFor(() => {
      if (!alive(child)) throw new Error(`redis-server on ${port} exited with ${child.exitCode}:\n${tail(log)}`);
      return canConnect(port);
    }, 10_000, 20);
    if (!up) throw new Error(`redis-server did not start on port ${port}:\n${tail(log)}`);
  }

  const nodes: RedisClusterNode[] = [];
  const cluster: RedisCluster = {
    url: '',
    nodes,
    async masterOf(slot) {
      for (const node of nodes.filter((n) => n.running())) {
        const ranges = await ask(node.port, (r) => r.cluster('SLOTS'));
        const owner = ranges?.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
        const master = nodes.find((n) => n.port === owner);
        if (master) return master;
      }
      throw new Error(`no running node of the cluster says which master serves slot ${slot}`);
    },
    async keySlot(key) {
      const node = nodes.find((n) => n.running());
      const slot = node && (await ask(node.port, (r) => r.cluster('KEYSLOT', key)));
      if (typeof slot !== 'number') throw new Error(`CLUSTER KEYSLOT ${key}: no answer`);
      return slot;
    },
    async waitUntilOk(timeoutMs = 10_000) {
      return waitFor(async () => {
        const answers = await Promise.all(
          nodes.filter((n) => n.running()).map((n) =>
            ask(n.port, async (r) => {
              const info = String(await r.cluster('INFO'));
              const role = String(await r.info('replication'));
              // A replica counts once it has its master's data.
              return /^cluster_state:ok\s*$/m.test(info) && (!/^role:slave\s*$/m.test(role) || /^master_link_status:up\s*$/m.test(role));
            }),
          ),
        );
        return answers.every((ok) => ok === true);
      }, timeoutMs, 50);
    },
    async waitUntilFailed(lost, timeoutMs = 10_000) {
      return waitFor(async () => {
        const others = nodes.filter((n) => n !== lost && n.running());
        const states = await Promise.all(others.map((n) => ask(n.port, async (r) => /^cluster_state:(\w+)/m.exec(String(await r.cluster('INFO')))?.[1])));
        return states.every((state) => state === 'fail');
      }, timeoutMs, 50);
    },
    async stop() {
      forget(noted);
      process.off('exit', onExit);
      await Promise.all([...children.values()].map((child) => stop(child, { signal: 'SIGKILL' })));
      await rm(dir, { recursive: true, force: true });
    },
  };

  const noted = `redis cluster ${dir}`;
  remember(noted, 'stop the Redis Cluster', () => cluster.stop());
  try {
    const ports = await distinctFreePorts(2 * masters * (1 + replicas));
    for (let i = 0; i < ports.length; i += 2) {
      const [port, busPort] = [ports[i]!, ports[i + 1]!];
      await start(port, busPort);
      const signal = async (sig: 'SIGTERM' | 'SIGKILL') => {
        const child = children.get(port);
        if (child) await stop(child, { signal: sig, graceMs: 5000 });
      };
      nodes.push({
        port,
        running: () => alive(children.get(port)),
        stop: () => signal('SIGTERM'),
        kill: () => signal('SIGKILL'),
        hang: () => children.get(port)?.kill('SIGSTOP'),
        resume: () => children.get(port)?.kill('SIGCONT'),
        restart: () => start(port, busPort),
        connect: () => new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 }),
      });
    }
    // The first `masters` addresses become masters; redis-cli assigns the rest as their replicas.
    await redisCli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes']);
    if (!(await cluster.waitUntilOk(20_000))) throw new Error('the Redis Cluster did not reach cluster_state:ok within 20 s');
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  cluster.url = `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  return cluster;
}

/** Whether startRedisCluster can run here: redis-server 7 or later (for --cluster-port) and redis-cli. */
export async function canStartRedisCluster(): Promise<boolean> {
  const version = (name: string) =>
    new Promise<string | undefined>((resolve) => execFile(name, ['--version'], (err, stdout) => resolve(err ? undefined : stdout)));
  const [server, cli] = await Promise.all([version('redis-server'), version('redis-cli')]);
  const major = Number(/v=(\d+)\./.exec(server ?? '')?.[1] ?? 0);
  return major >= 7 && cli !== undefined;
}

/** `n` ports nothing listens on, all different (freePort may hand out one twice). */
async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/** The last lines of a node's log, for a start that failed. */
function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-10).join('\n');
  } catch {
    return '(no log)';
  }
}
