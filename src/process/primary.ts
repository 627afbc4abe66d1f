import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.js';
import { clusterMetrics } from '../metrics/cluster.js';
import { startMetricsListener } from '../metrics/listener.js';

const say = (message: string) => process.stderr.write(`[primary ${process.pid}] ${message}\n`);

/** Restart delays: doubling from 100 ms to 30 s; back to the start once a worker has served a minute. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 30_000;
const STABLE_MS = 60_000;

/**
 * WORKERS > 1: forks that many workers sharing the port (node:cluster) and keeps that
 * many running: a worker that dies is replaced after a backoff that grows while
 * replacements keep failing (a database outage, say), and the others keep serving
 * meanwhile. It exits only on SIGTERM/SIGINT: it passes the signal on, and exits when
 * every worker has (0 if each drained and stopped cleanly).
 */
export async function runPrimary(config: Config): Promise<void> {
  let stopping = false;
  let failed = false;
  let delayMs = FIRST_DELAY_MS;
  // The workers share the API's port; the metrics listener is the primary's, summing every worker.
  const { enabled, host, port, token } = config.metrics;
  if (enabled) await startMetricsListener({ host, port, token, ...clusterMetrics() });

  const fork = () => {
    const worker = cluster.fork();
    const started = Date.now();
    worker.once('exit', (code, signal) => {
      if (stopping) {
        if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGINT') failed = true;
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
        return;
      }
      if (Date.now() - started >= STABLE_MS) delayMs = FIRST_DELAY_MS;
      say(`worker ${worker.process.pid} exited (${signal ?? code}); starting another in ${delayMs} ms`);
      setTimeout(() => stopping || fork(), delayMs);
      delayMs = Math.min(delayMs * 2, MAX_DELAY_MS);
    });
  };

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal is passed on too: it cuts the workers' drain short.
      for (const worker of liveWorkers()) worker.process.kill(signal);
      return;
    }
    stopping = true;
    const workers = liveWorkers();
    if (workers.length === 0) process.exit(0);
    for (const worker of workers) worker.process.kill(signal);
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (let i = 0; i < config.workers; i++) fork();
  say(`${config.workers} workers on ${config.host}:${config.port}`);
}

function liveWorkers(): Worker[] {
  return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
}
