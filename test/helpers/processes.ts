import { execFile, spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import http from 'node:http';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';
import { forget, remember } from './cleanup.js';
import { waitFor } from './poll.js';
import { freePort } from './ports.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Every variable the service reads: a child gets only those it is given, never the caller's. */
const SERVICE_SETTINGS = new Set(CONFIG_VARIABLES);

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const inherited = Object.entries(process.env).filter(([name]) => !SERVICE_SETTINGS.has(name));
  return { ...Object.fromEntries(inherited), ...env };
}

/** Runs a TypeScript entry point of this repo as its npm script does (through tsx) and waits for it to exit. */
export function runScript(script: string, args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: projectRoot, env: childEnv(env), timeout: timeoutMs },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({ code: !err ? 0 : typeof code === 'number' ? code : 1, stdout, stderr });
      },
    );
  });
}

/**
 * Starts an entry point of this repo without waiting for anything: a TypeScript file through
 * tsx, or a compiled `.js` file (dist/…, as `npm start` runs it) with plain node.
 * `detached`: the child leads a process group of its own, so a test can signal the whole group (`-pid`).
 */
function spawnScript(script: string, env: Record<string, string>, stdio: StdioOptions = 'pipe', detached = false, nodeArgs: string[] = []): ChildProcess {
  const loader = script.endsWith('.js') ? [] : ['--import', 'tsx'];
  return spawn(process.execPath, [...nodeArgs, ...loader, script], { cwd: projectRoot, env: childEnv(env), stdio, detached });
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/**
 * Waits until a daemon the caller spawned answers `answers()`. If it exits first or does not
 * answer within `timeoutMs`, runs `cleanUp` and throws with the daemon's log (`log()`).
 */
export async function awaitDaemon(
  name: string,
  child: ChildProcess,
  opts: { answers: () => Promise<boolean>; log: () => string; cleanUp: () => Promise<void>; waitingFor: string; timeoutMs?: number },
): Promise<void> {
  const { answers, log, cleanUp, waitingFor, timeoutMs = 15_000 } = opts;
  const up = await waitFor(async () => {
    if (!running(child)) throw new Error(`${name} exited with ${child.exitCode ?? child.signalCode}:\n${log()}`);
    return answers();
  }, timeoutMs).catch(async (err: Error) => {
    await cleanUp();
    throw err;
  });
  if (!up) {
    await cleanUp();
    throw new Error(`${name} did not ${waitingFor} within ${timeoutMs / 1000} s:\n${log()}`);
  }
}

/** Resolves with the exit code of `child` (null when a signal ended it) once it has exited. */
function exited(child: ChildProcess): Promise<number | null> {
  if (!running(child)) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Sends `signal` (SIGTERM), then SIGKILL if `child` still runs `graceMs` later; resolves with its exit code. */
export async function stop(child: ChildProcess, { signal = 'SIGTERM', graceMs = 15_000 }: { signal?: NodeJS.Signals; graceMs?: number } = {}): Promise<number | null> {
  const done = exited(child);
  if (!running(child)) return done;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  try {
    return await done;
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with what `child` has printed on stdout once that matches `pattern`; rejects if it exits first or after `timeoutMs`. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 45_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    let errors = '';
    const onOutput = (chunk: Buffer) => {
      output += chunk.toString();
      if (pattern.test(output)) finish();
    };
    const onErrors = (chunk: Buffer) => (errors += chunk.toString());
    const onExit = (code: number | null) => finish(`exited with ${code}`);
    const timer = setTimeout(() => finish(`still running after ${timeoutMs / 1000} s`), timeoutMs);
    function finish(failure?: string) {
      clearTimeout(timer);
      child.stdout!.off('data', onOutput);
      child.stderr?.off('data', onErrors);
      child.off('exit', onExit);
      // Keep draining, so that the child never blocks on a full pipe.
      child.stdout!.resume();
      child.stderr?.resume();
      if (failure) reject(new Error(`${failure} without printing ${pattern}:\n${output}${errors}`));
      else resolve(output);
    }
    child.stdout!.on('data', onOutput);
    child.stderr?.on('data', onErrors);
    child.once('exit', onExit);
  });
}

/** Whether `url` answers 2xx, on a connection of its own that closes after (no keep-alive connection is left on the server). */
function answersOk(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/** Polls `url` until it answers 2xx; fails at once if `child` exits first, and after `timeoutMs`. */
async function waitUntilAnswers(url: string, { child, timeoutMs = 30_000 }: { child?: ChildProcess; timeoutMs?: number } = {}): Promise<void> {
  const answered = await waitFor(async () => {
    if (child && !running(child)) throw new Error(`exited with ${child.exitCode ?? child.signalCode} before ${url} answered`);
    return answersOk(url);
  }, timeoutMs);
  if (!answered) throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`);
}

export interface Server {
  child: ChildProcess;
  baseUrl: string;
  /** Its metrics listener's /metrics (METRICS_PORT, a free port unless `env` names one). */
  metricsUrl: string;
  /** SIGTERM, then SIGKILL after 15 s; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Starts a server entry point of this repo (src/server.ts, a bench server) on a free port of
 * 127.0.0.1 (or the given `port`) and waits until `readyPath` answers 2xx. Its stdout is the caller's to read
 * (`stdout: 'ignore'` for a server that logs every request and nobody reads).
 */
export async function startServer(
  entry: string,
  env: Record<string, string>,
  {
    readyPath = '/healthz',
    stdout = 'pipe',
    timeoutMs = 60_000,
    detached = false,
    nodeArgs = [],
    port: fixedPort,
  }: {
    readyPath?: string;
    stdout?: 'pipe' | 'ignore';
    timeoutMs?: number;
    detached?: boolean;
    /** Flags for node itself (such as --cpu-prof, which NODE_OPTIONS refuses). */
    nodeArgs?: string[];
    /** Listen on this port rather than a free one: a server started again where a load balancer expects it. */
    port?: number;
  } = {},
): Promise<Server> {
  const port = fixedPort ?? (await freePort());
  const metricsPort = env.METRICS_PORT ?? String(await freePort());
  // No drain unless a test asks for one: these servers are stopped on purpose, with nobody to warn.
  const child = spawnScript(
    entry,
    { SHUTDOWN_DRAIN_SECONDS: '0', ...env, PORT: String(port), HOST: '127.0.0.1', METRICS_PORT: metricsPort },
    ['ignore', stdout, 'pipe'],
    detached,
    nodeArgs,
  );
  const noted = `process ${child.pid}`;
  remember(noted, `stop ${entry} (pid ${child.pid})`, () => stop(child));
  child.once('exit', () => forget(noted));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    await waitUntilAnswers(`${baseUrl}${readyPath}`, { child, timeoutMs });
  } catch (err) {
    await stop(child, { signal: 'SIGKILL' });
    throw new Error(`${entry}: ${(err as Error).message}\n${stderr}`);
  }
  return { child, baseUrl, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, stop: () => stop(child) };
}
