import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './poll.js';
import { canConnect } from './ports.js';
import { stop } from './processes.js';

/**
 * A throwaway redis-server of one test file, on `port`; resolves once it accepts connections.
 * Needs the redis-server binary (guard with `withoutRedisServerBinary()`), not the run's Redis.
 */
export async function startRedisServer(port: number): Promise<ChildProcess> {
  // --set-proc-title no: setting its title would overwrite its environment, and the test run's marker with it (testRun.ts).
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--set-proc-title', 'no'], {
    stdio: 'ignore',
  });
  const up = await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    return canConnect(port);
  }, 10_000, 50);
  if (up) return child;
  await stop(child, { signal: 'SIGKILL' });
  throw new Error(`redis-server did not start on port ${port}`);
}

/** Kills a redis-server of startRedisServer at once (an outage, not a shutdown) and waits until it is gone. */
export async function killRedisServer(child: ChildProcess | undefined): Promise<void> {
  if (child) await stop(child, { signal: 'SIGKILL' });
}
