/*
 * What this process made that must not outlive it: databases, servers and daemons, scratch
 * folders. The shared helpers (databases.ts, processes.ts, scratchDir.ts, pgbouncer.ts,
 * haproxy.ts, redisCluster.ts) note each thing as they make it and forget it once it is
 * undone, so that a command run through runCommand() undoes whatever is left when it ends,
 * fails, or is interrupted, without listing anything itself. In tests nothing installs the
 * handlers: a test undoes its own things, and the run's reaper the rest (test/helpers/testRun.ts).
 */

import { readdirSync, readFileSync } from 'node:fs';

interface Made {
  what: string;
  undo: () => Promise<unknown>;
}

const made = new Map<string, Made>();

/** Notes something made, to be undone by `undo` unless forgotten first (same `key`: replaced). */
export function remember(key: string, what: string, undo: () => Promise<unknown>): void {
  made.delete(key); // re-added last: undone first
  made.set(key, { what, undo });
}

/** It has been undone (or handed over): nothing to do for it any more. */
export function forget(key: string): void {
  made.delete(key);
}

const log = (line: string) => process.stderr.write(`${line}\n`);

let undoing: Promise<void> | undefined;

/**
 * Undoes everything still noted, last made first, each even if another fails, until nothing is
 * left: a start still in progress may note more while the clean-up runs (a Ctrl-C during start).
 */
export function undoAll(): Promise<void> {
  undoing ??= (async () => {
    for (let last = [...made].at(-1); last; last = [...made].at(-1)) {
      const [key, m] = last;
      made.delete(key);
      await m.undo().catch((err: Error) => log(`clean-up: could not ${m.what}: ${err.message}`));
    }
  })().finally(() => {
    undoing = undefined;
  });
  return undoing;
}

/**
 * SIGKILLs this process's own children still running: what a start in progress spawned after its
 * helper was undone (a Redis Cluster node, say, started while the clean-up stopped the others).
 * Synchronous, so that nothing can start between it and the exit. Linux (/proc); elsewhere a no-op.
 */
function killChildren(): void {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

const SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;

/**
 * On SIGINT, SIGTERM or SIGHUP: undo everything, then exit (128 + the signal's number). Ctrl-C
 * reaches npm, tsx and node together, so one press can arrive as two or three signals: later
 * ones are ignored until the clean-up is done (a clean-up cut short is how a database got left
 * behind). Children in the same process group get the Ctrl-C as well, and stop on their own.
 */
export function undoAllOnSignals(): void {
  for (const [signal, number] of Object.entries(SIGNALS)) {
    process.on(signal, () => {
      if (undoing) return;
      log(`\n${signal}: cleaning up (${[...made.values()].map((m) => m.what).join('; ') || 'nothing left'})…`);
      void undoAll().then(() => {
        killChildren();
        log('Cleaned up.');
        process.exit(128 + number);
      });
    });
  }
}

/**
 * Runs a command's `main` so that nothing it made outlives it: undone after it returns
 * (its number is the exit code), after it fails (its message is printed, with the stack at
 * LOG_LEVEL=debug, and the exit code is 1), and on a signal.
 */
export async function runCommand(main: () => Promise<number | void>): Promise<void> {
  undoAllOnSignals();
  let code = 1;
  try {
    code = (await main()) ?? 0;
  } catch (err) {
    log(process.env.LOG_LEVEL === 'debug' ? String((err as Error).stack) : (err as Error).message);
  } finally {
    await undoAll();
    if (code !== 0) killChildren(); // a failure may leave a start in progress
  }
  process.exitCode = code;
}
