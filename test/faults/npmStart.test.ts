import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { waitFor } from '../helpers/poll.js';
import { canConnect, freePort } from '../helpers/ports.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';
import { countOutcomes, getOnce } from '../helpers/oneShot.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

/** How long after a signal the server takes the same signal for its echo (ECHO_MS in src/server.ts). */
const ECHO_WINDOW_MS = 1000;

describe('npm start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await scratchDir('as-npm-start-');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('stops when SIGTERM goes to the `npm start` process itself, as a supervisor sends it', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start'], {
      cwd: projectRoot,
      env: { ...process.env, DATA_DIR: dir, PORT: String(port), METRICS_PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_SECONDS: '0' },
      stdio: 'ignore',
    });
    const npmExited = new Promise<number | null>((resolve) => npm.once('exit', resolve));
    expect(await waitFor(() => canConnect(port), 90_000, 200)).toBe(true); // builds first (prestart)

    npm.kill('SIGTERM');
    await npmExited;
    // Nothing is left serving: npm passed the signal on, and the start script execs node.
    expect(await waitFor(async () => !(await canConnect(port)), 10_000)).toBe(true);
  }, 120_000);
});

/** `npm start` (built once, so --ignore-scripts skips the prestart build) leading a process group of its own, as a terminal or systemd starts it. */
interface Started {
  npm: ChildProcess;
  /** The server: npm's child (the start script execs node). */
  nodePid: number;
  port: number;
  exit: Promise<number | null>;
  log(): string;
}

async function startNpmGroup(env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const npm = spawn('npm', ['start', '--ignore-scripts'], {
    cwd: projectRoot,
    env: { ...process.env, ...env, PORT: String(port), METRICS_PORT: String(await freePort()), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let log = '';
  npm.stdout!.on('data', (chunk) => (log += chunk));
  npm.stderr!.on('data', (chunk) => (log += chunk));
  const exit = new Promise<number | null>((resolve) => npm.once('exit', resolve));
  onTestFinished(() => {
    if (npm.exitCode !== null || npm.signalCode !== null) return;
    process.kill(-npm.pid!, 'SIGCONT');
    process.kill(-npm.pid!, 'SIGKILL');
  });
  expect(await waitFor(async () => (await getOnce(port, '/readyz')).status === 200, 60_000, 200), log).toBe(true);
  const nodePid = Number(execFileSync('pgrep', ['-P', String(npm.pid)], { encoding: 'utf8' }).trim());
  return { npm, nodePid, port, exit, log: () => log };
}

const lines = (log: string, msg: RegExp) => log.split('\n').filter((l) => msg.test(l));

describe('npm start stopped by a signal, with 80 requests in the listen queue', () => {
  let db: ServerDatabase;
  let key: string;
  beforeAll(async () => {
    db = await createServerDatabase('npmstop');
    key = await createKey(db.env, { plan: 'enterprise', perMinute: 100_000, perDay: 1_000_000 });
    await promisify(execFile)('npm', ['run', '--silent', 'build'], { cwd: projectRoot, timeout: 180_000 });
  }, 240_000);
  afterAll(() => db?.drop());

  // The process group: npm and the server each get the signal from the kernel, and npm
  // forwards its own to the server a few milliseconds later. To the node process alone: once.
  it.each([
    ['the whole process group (kill -- -PGID)', (s: Started) => process.kill(-s.npm.pid!, 'SIGTERM')],
    ['the node process alone', (s: Started) => process.kill(s.nodePid, 'SIGTERM')],
  ])('SIGTERM to %s: all 80 answered, readiness fails during the drain, exit 0', async (name, signal) => {
    const s = await startNpmGroup({ ...db.env, SHUTDOWN_DRAIN_SECONDS: '2' });
    expect((await getOnce(s.port, '/v1/pets?limit=1', key)).status).toBe(200);

    // Freeze npm and the server, so new connections wait in the kernel's listen queue and
    // both processes see the signal only once they run again.
    process.kill(-s.npm.pid!, 'SIGSTOP');
    const queued = Array.from({ length: 80 }, () => getOnce(s.port, '/v1/pets?limit=1', key));
    await new Promise((r) => setTimeout(r, 300));
    signal(s);
    process.kill(-s.npm.pid!, 'SIGCONT');

    const readiness = await getOnce(s.port, '/readyz');
    const answers = await Promise.all(queued);
    const code = await s.exit;
    const counts = countOutcomes(answers);
    const repeats = lines(s.log(), /SIGTERM again within/);
    console.log(`${name}: ${JSON.stringify(counts)}; readiness during the drain: ${readiness.status}; exit ${code}; repeats ignored: ${repeats.length}`);
    expect(counts).toEqual({ 200: 80 });
    expect(readiness.status).toBe(503);
    expect(code).toBe(0);
    expect(lines(s.log(), /a second signal/)).toEqual([]);
    // The group's signal did reach the server twice (npm forwarded its own); alone, once.
    expect(repeats).toHaveLength(name.startsWith('the whole') ? 1 : 0);
  }, 90_000);

  it('exits at once (1) on a genuine second signal, one after the echo window', async () => {
    const s = await startNpmGroup({ ...db.env, SHUTDOWN_DRAIN_SECONDS: '60' });
    const started = Date.now();
    // The group's signal: the server's own and npm's forward (its echo, or merged with it by the kernel).
    process.kill(-s.npm.pid!, 'SIGTERM');
    // The drain has begun once readiness fails; it still serves (the double signal did not end it).
    expect(await waitFor(async () => (await getOnce(s.port, '/readyz')).status === 503, 15_000, 20), s.log()).toBe(true);
    const drainSeenAt = performance.now();
    const during = await getOnce(s.port, '/v1/pets?limit=1', key);
    expect(during.status).toBe(200);
    expect(during.connection).toBe('close');

    // The server tells an echo from a second signal by time alone (ECHO_MS in src/server.ts): this one is
    // sent once that window has passed since the drain was seen, which was after the first signal arrived.
    await sleep(Math.max(0, ECHO_WINDOW_MS + 200 - (performance.now() - drainSeenAt)));
    process.kill(s.nodePid, 'SIGTERM');
    const code = await s.exit;
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000); // not the 60 s drain
    expect(lines(s.log(), /SIGTERM: a second signal, exiting without finishing the drain/)).toHaveLength(1);
    expect(await canConnect(s.port)).toBe(false);
  }, 90_000);
});

/** Whether process `pid` has ended (a zombie nobody reaped yet counts: it runs nothing). */
function ended(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return / Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/\(.*\)/, ''));
}

describe('npm start at a terminal that closes', () => {
  beforeAll(() => promisify(execFile)('npm', ['run', '--silent', 'build'], { cwd: projectRoot, timeout: 180_000 }), 240_000);

  it('stops listening and exits, and its embedded PostgreSQL stops, within the drain plus 5 s (SIGHUP, its stdout gone)', async () => {
    const dataDir = await scratchDir('as-npm-tty-');
    const port = await freePort();
    const drainSeconds = 1;
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
    const env = {
      ...inherited,
      DATA_DIR: dataDir,
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_SECONDS: String(drainSeconds),
    };
    // script(1) runs `npm start` (built above: --ignore-scripts skips the prestart build) on a
    // pseudo-terminal whose master it holds, as a terminal window does: killing it closes the terminal.
    const tty = spawn('script', ['-qfec', 'npm start --ignore-scripts', '/dev/null'], { cwd: projectRoot, env });
    let out = '';
    tty.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    tty.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const running = () => spawnSync('pgrep', ['-f', dataDir], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean).map(Number);
    onTestFinished(async () => {
      tty.kill('SIGKILL');
      for (const pid of running()) process.kill(pid, 'SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    });
    expect(await waitFor(async () => (await getOnce(port, '/readyz')).status === 200, 90_000, 200), out).toBe(true);
    expect(await waitFor(() => /"pid":\d+/.test(out), 5000), out).toBe(true); // its log lines, each with its pid, at least once a second
    const serverPid = Number(/"pid":(\d+)/.exec(out)?.[1]);
    const postmasterPid = path.join(dataDir, 'postmaster.pid');
    const postgresPid = Number((await readFile(postmasterPid, 'utf8')).split('\n')[0]);
    expect(ended(serverPid)).toBe(false);
    expect(ended(postgresPid)).toBe(false);

    tty.kill('SIGKILL'); // the terminal closes: the kernel hangs up its session (SIGHUP), and writes to it fail (EIO)
    const stopped = await waitFor(() => ended(serverPid) && ended(postgresPid) && !existsSync(postmasterPid), (drainSeconds + 5) * 1000, 50);
    expect(stopped, `left running: ${running().join(', ')}\n${out}`).toBe(true);
    expect(running()).toEqual([]); // nothing started for the store either (the process that runs PostgreSQL)
    expect(await canConnect(port)).toBe(false);
  }, 150_000);
});
