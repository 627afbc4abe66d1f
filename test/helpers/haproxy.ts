import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findBinary } from './binaries.js';
import { forget, remember } from './cleanup.js';
import { haproxyConfig, type BackendServer, type HealthChecks } from './haproxyConfig.js';
import { backendStats, type BackendStats, type ServerState } from './haproxyRuntime.js';
import { waitFor } from './poll.js';
import { canConnect, freePort } from './ports.js';
import { awaitDaemon, stop } from './processes.js';
import { scratchDir } from './scratchDir.js';

export type { BackendServer, HealthChecks } from './haproxyConfig.js';
export type { BackendStats, ServerState, ServerStats } from './haproxyRuntime.js';

export interface HAProxy {
  /** The frontend: http://127.0.0.1:port. */
  url: string;
  /** HAProxy's stats page, for a person to look at. */
  statsUrl: string;
  checks: HealthChecks;
  /** Each server's state and counters, from the runtime API. */
  stats(): Promise<BackendStats>;
  /** Each server's state by name. */
  states(): Promise<Record<string, ServerState>>;
  /** Polls until server `name` is in `state`; false after `timeoutMs`. */
  waitForState(name: string, state: ServerState, timeoutMs: number): Promise<boolean>;
  /** What HAProxy printed last (state changes, alerts). */
  log(): string;
  stop(): Promise<void>;
}

export interface HAProxyOptions {
  servers: BackendServer[];
  /** The frontend's port; a free one by default. */
  port?: number;
  /** Health checks of /readyz: every 500 ms, out after 2 failures, back after 2 passes by default. */
  checks?: Partial<HealthChecks>;
}

const BACKEND = 'api';

/**
 * Starts Debian's HAProxy in the foreground with a generated config (see haproxyConfig.ts) in
 * a scratch directory, in front of `servers` on 127.0.0.1, and waits until its frontend accepts
 * connections and its runtime API answers.
 */
export async function startHAProxy({ servers, port, checks: given = {} }: HAProxyOptions): Promise<HAProxy> {
  const binary = await findBinary('haproxy');
  if (!binary) throw new Error('haproxy is not installed (apt-get install -y haproxy)');
  const checks: HealthChecks = { interMs: 500, fall: 2, rise: 2, ...given };
  const [frontendPort, statsPort] = [port ?? (await freePort()), await freePort()];
  const dir = await scratchDir('as-haproxy-');
  const socket = path.join(dir, 'admin.sock');
  const config = path.join(dir, 'haproxy.cfg');
  await writeFile(config, haproxyConfig({ port: frontendPort, statsPort, socket, servers, checks }));

  const child = spawn(binary, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-8000)));
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  // The test process may die without calling stop(): leave no balancer behind.
  const onExit = () => {
    if (!exited()) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const noted = `process ${child.pid}`;
  const cleanUp = async () => {
    forget(noted);
    process.off('exit', onExit);
    await stop(child, { graceMs: 5000 });
    await rm(dir, { recursive: true, force: true });
  };
  remember(noted, `stop haproxy (pid ${child.pid})`, cleanUp);

  const stats = () => backendStats(socket, BACKEND);
  await awaitDaemon('haproxy', child, {
    answers: async () => (await canConnect(frontendPort)) && (await stats().then(() => true, () => false)),
    log: () => log,
    cleanUp,
    waitingFor: `listen on port ${frontendPort}`,
  });

  const states = async () => Object.fromEntries((await stats()).servers.map((s) => [s.name, s.state]));
  return {
    url: `http://127.0.0.1:${frontendPort}`,
    statsUrl: `http://127.0.0.1:${statsPort}/`,
    checks,
    stats,
    states,
    waitForState: (name, state, timeoutMs) => waitFor(async () => (await states())[name] === state, timeoutMs, 50),
    log: () => log,
    stop: cleanUp,
  };
}

/** Whether startHAProxy can run here. */
export async function canStartHAProxy(): Promise<boolean> {
  return (await findBinary('haproxy')) !== undefined;
}
