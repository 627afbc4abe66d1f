import { execFileSync } from 'node:child_process';
import { projectRoot } from '../src/paths.js';
import { startServer } from '../test/helpers/processes.js';

/** A server under test, in a process of its own so that its CPU time is its own. */
export interface Target {
  name: string;
  baseUrl: string;
  metricsUrl: string;
  pid: number;
  stop(): Promise<unknown>;
}

/**
 * Builds the service as `npm start` runs it (`npm run build` → dist/) and the ceiling beside it
 * (bench/tsconfig.json → dist/bench/): both run compiled, neither through tsx's loader.
 */
export function build(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'inherit' });
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'bench/tsconfig.json'], { cwd: projectRoot, stdio: 'inherit' });
}

/** Starts a compiled entry (dist/…) in production mode with `env` and waits until `readyPath` answers. */
export async function startTarget(name: string, entry: string, env: Record<string, string>, readyPath: string): Promise<Target> {
  // stdout ignored: at LOG_LEVEL=info the service writes a line per request, as it does in production.
  const server = await startServer(entry, { NODE_ENV: 'production', ...env }, { readyPath, stdout: 'ignore' });
  // A server that dies mid-run says why (else the run only finds its /proc entry gone).
  let stopping = false;
  let stderr = '';
  server.child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  server.child.once('exit', (code, signal) => {
    if (!stopping) process.stderr.write(`${name} (pid ${server.child.pid}) exited with ${code ?? signal}:\n${stderr}\n`);
  });
  const stop = () => {
    stopping = true;
    return server.stop();
  };
  return { name, baseUrl: server.baseUrl, metricsUrl: server.metricsUrl, pid: server.child.pid!, stop };
}
