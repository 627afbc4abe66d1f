import cluster, { type Worker } from 'node:cluster';
import type { Config } from '../config.js';

const say = (message: string) => process.stderr.write(`[primary ${process.pid}] ${message}\n`);

/**
 * WORKERS > 1: forks that many workers sharing the port (node:cluster), replaces one that
 * dies, and on SIGTERM/SIGINT passes the signal on and exits when they have all finished
 * (0 if every worker shut down cleanly). A worker that dies before it ever listened means
 * the service cannot start (bad database, say): everything stops with exit code 1.
 */
export function runPrimary(config: Config): void {
  let stopping = false;
  let failed = false;

  const fork = () => {
    const worker = cluster.fork();
    let listening = false;
    worker.once('listening', () => (listening = true));
    worker.once('exit', (code, signal) => {
      if (stopping) {
        // A worker still starting has nothing in flight: being stopped by the signal is fine.
        if (listening && code !== 0) failed = true;
        if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
        return;
      }
      if (!listening) {
        say(`worker ${worker.process.pid} exited (${signal ?? code}) before it could serve: stopping`);
        failed = true;
        stop('SIGTERM');
        return;
      }
      say(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
      fork();
    });
  };

  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(failed ? 1 : 0);
    for (const worker of workers) worker.process.kill(signal);
  };

  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  for (let i = 0; i < config.workers; i++) fork();
  say(`${config.workers} workers on ${config.host}:${config.port}`);
}
