import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.js';
import { clusterMetrics } from '../metrics/cluster.js';
import { startMetricsListener } from '../metrics/listener.js';
import { portKeeper } from './portKeeper.js';
import { signalCounter } from './signals.js';

const say = (message: string) => process.stderr.write(`[primary ${process.pid}] ${message}\n`);

/** Restart delays: doubling from 100 ms to 30 s; back to the start once a worker has run a minute. */
const FIRST_DELAY_MS = 100;
const MAX_DELAY_MS = 30_000;
const STABLE_MS = 60_000;

/** One of the WORKERS places a worker runs in, with its own restart backoff. */
interface Slot {
  /** Its worker has started listening (node:cluster's 'listening'), so it serves. */
  serving: boolean;
  delayMs: number;
}

/**
 * WORKERS > 1: forks that many workers sharing the port (node:cluster) and keeps that many
 * running. A worker that dies is replaced after its slot's backoff, which grows while that
 * slot's replacements keep dying (a database outage, say) and the others keep serving; a
 * worker that was serving when no other was is replaced at once, and until one listens
 * again the primary holds the port, so connections wait instead of being refused
 * (portKeeper.ts). It exits only on SIGTERM/SIGINT: it passes the signal on, and exits
 * when every worker has (0 if each drained and stopped cleanly).
 */
export async function runPrimary(config: Config): Promise<void> {
  let stopping = false;
  let failed = false;
  // The workers share the API's port; the metrics listener is the primary's, summing every worker.
  const { enabled, host, port, token } = config.metrics;
  if (enabled) await startMetricsListener({ host, port, token, ...clusterMetrics() });
  const keeper = portKeeper(config.port, config.host);
  cluster.on('message', (worker, message) => keeper.answer(worker, message));
  const slots: Slot[] = Array.from({ length: config.workers }, () => ({ serving: false, delayMs: FIRST_DELAY_MS }));

  const fork = (slot: Slot) => {
    const worker = cluster.fork();
    const started = Date.now();
    slot.serving = false;
    worker.once('listening', () => {
      slot.serving = true;
      keeper.handOver(worker);
    });
    let exit: { code: number; signal: string } | undefined;
    // Once it has exited and node:cluster has let go of its share of the port ('disconnect' may come after 'exit').
    const gone = () => {
      if (!exit || worker.isConnected()) return;
      const { code, signal } = exit;
      exit = undefined;
      const served = slot.serving;
      slot.serving = false;
      if (stopping) {
        if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGINT') failed = true;
        if (liveWorkers().length === 0) process.exit(failed ? 1 : 0);
        return;
      }
      if (Date.now() - started >= STABLE_MS) slot.delayMs = FIRST_DELAY_MS;
      // A worker that never listened is failing to start: retrying at once would not help.
      const noneServing = served && slots.every((s) => !s.serving);
      if (noneServing) keeper.hold();
      const delayMs = noneServing ? 0 : slot.delayMs;
      say(`worker ${worker.process.pid} exited (${signal ?? code}); starting another in ${delayMs} ms${noneServing ? ' (no worker is serving: holding connections until one is)' : ''}`);
      setTimeout(() => stopping || fork(slot), delayMs);
      slot.delayMs = Math.min(slot.delayMs * 2, MAX_DELAY_MS);
    };
    worker.once('exit', (code, signal) => {
      exit = { code, signal };
      gone();
    });
    worker.once('disconnect', gone);
  };

  const classify = signalCounter();
  const stop = (signal: NodeJS.Signals) => {
    const meaning = classify(signal);
    // The workers had it too (the process group's), or get it from the first pass.
    if (meaning === 'repeat') return;
    if (stopping) {
      // A second signal is passed on too: it cuts the workers' drain short.
      for (const worker of liveWorkers()) worker.process.kill(signal);
      return;
    }
    stopping = true;
    keeper.stop();
    const workers = liveWorkers();
    if (workers.length === 0) process.exit(0);
    for (const worker of workers) worker.process.kill(signal);
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (const slot of slots) fork(slot);
  say(`${config.workers} workers on ${config.host}:${config.port}`);
}

function liveWorkers(): Worker[] {
  return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
}
