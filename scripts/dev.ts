// npm run dev: the server from source with readable logs, restarted on every change of its
// sources or of openapi.yaml, whose types in generated/ are regenerated on each change too.
import { spawn, type ChildProcess } from 'node:child_process';
import { watch } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import { parseCommandLine } from './lib/cli.js';

const USAGE = `Usage: npm run dev

Runs the server from source (tsx watch src/server.ts) with pino-pretty logs. It restarts
when a source file or openapi.yaml changes, and every change of openapi.yaml also regenerates
generated/openapi.ts (npm run generate), so types and tests follow the document. Configured
by the same variables as npm start (docs/CONFIGURATION.md), except that LOG_FORMAT defaults
to pretty and SHUTDOWN_DRAIN_SECONDS to 0 (no load balancer to warn), so restarts are quick.
Ctrl-C stops it.`;

parseCommandLine(USAGE);

const bin = (name: string) => path.join(projectRoot, 'node_modules', '.bin', name);
const log = (line: string) => process.stdout.write(`[dev] ${line}\n`);

let generating: ChildProcess | undefined;
let again = false;

/** `npm run generate`'s command; one run at a time, and one more if openapi.yaml changed meanwhile. */
function generate(): void {
  if (generating) {
    again = true;
    return;
  }
  // As `npm run generate`: --empty-objects-unknown types a free-form object (Event.data.object) as Record<string, unknown>.
  const child = spawn(bin('openapi-typescript'), ['openapi.yaml', '--empty-objects-unknown', '-o', 'generated/openapi.ts'], { cwd: projectRoot, stdio: ['ignore', 'ignore', 'pipe'] });
  generating = child;
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  child.once('close', (code) => {
    generating = undefined;
    if (code === 0) log('openapi.yaml changed: generated/openapi.ts regenerated');
    else log(`openapi.yaml changed, but generated/openapi.ts could not be regenerated:\n${errors.trim()}`);
    if (again) {
      again = false;
      generate();
    }
  });
}

// The folder, not the file: editors save by replacing the file, which ends a watch on the file itself.
let timer: NodeJS.Timeout | undefined;
watch(projectRoot, (_event, name) => {
  if (name !== 'openapi.yaml') return;
  clearTimeout(timer);
  timer = setTimeout(generate, 100); // one save can be several events
});

const server = spawn(bin('tsx'), ['watch', '--clear-screen=false', '--include', 'openapi.yaml', 'src/server.ts'], {
  cwd: projectRoot,
  stdio: 'inherit',
  env: { ...process.env, LOG_FORMAT: process.env.LOG_FORMAT || 'pretty', SHUTDOWN_DRAIN_SECONDS: process.env.SHUTDOWN_DRAIN_SECONDS || '0' },
});
// Ctrl-C reaches tsx too; it stops the server and exits, and so does this process after it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => server.kill(signal));
server.once('exit', (code, signal) => process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0)));
