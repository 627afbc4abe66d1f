import { execFile, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { projectRoot } from '../../src/paths.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a TypeScript entry point of this repo as its npm script does (through tsx). */
export function runScript(script: string, args: string[], env: Record<string, string>): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: projectRoot, env: { ...cleanEnv(), ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** `detached`: the child leads a process group of its own, so a test can signal it with its workers (`-pid`). */
export function spawnScript(script: string, env: Record<string, string>, opts: { detached?: boolean } = {}): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script], { cwd: projectRoot, env: { ...cleanEnv(), ...env }, detached: opts.detached ?? false });
}

/** The parent's environment without the settings a test must choose itself. */
function cleanEnv(): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, DATA_DIR: _dd, REDIS_URL: _r, PORT: _p, ...rest } = process.env;
  return rest;
}

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 2xx (a server process finishing its start), for up to 30 s. */
export async function waitUntilAnswers(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within 30 s`);
}
