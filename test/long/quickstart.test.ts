import { execFile, spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, statSync } from 'node:fs';
import { chmod, cp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { canConnect, freePort } from '../helpers/ports.js';
import { stop } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { PLACES, placeOf } from '../../src/db/embeddedPlace.js';
import { projectRoot } from '../../src/paths.js';

/*
 * The README's quick start, as a newcomer follows it: in a fresh checkout (no node_modules,
 * no dist/, no data/), its server block (`npm ci && npm start`) in one terminal, then its
 * client block (a key, two creates, a page, the next page) in another, then Ctrl-C.
 * The one liberty taken: free ports instead of 3000 and 9464, which may be in use on a shared machine.
 */

const run = promisify(execFile);

/** The block of code that follows `<!-- quickstart:<name>` in the README. */
function block(readme: string, name: string): string {
  const m = new RegExp(`<!-- quickstart:${name}[^>]*-->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!m) throw new Error(`README.md has no quickstart:${name} block`);
  return m[1]!;
}

/** Run as root, the checkout is where root clones: in a private folder (0700, as root's home), which the postgres user cannot enter. */
const asRoot = process.getuid?.() === 0;

/** What a clone of this working tree would hold once committed: its tracked and new files, nothing ignored. */
async function freshCheckout(): Promise<string> {
  let dir = await scratchDir('as-quickstart-');
  if (asRoot) {
    await chmod(dir, 0o700);
    dir = path.join(dir, 'animal-store');
  }
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: projectRoot, maxBuffer: 16 << 20 });
  for (const file of new Set(stdout.split('\0').filter(Boolean))) {
    if (existsSync(path.join(projectRoot, file))) await cp(path.join(projectRoot, file), path.join(dir, file), { recursive: true });
  }
  return dir;
}

it('the README quick start works as written in a fresh checkout: npm ci && npm start, the curl block, Swagger UI, Ctrl-C', async () => {
  const readme = await readFile(path.join(projectRoot, 'README.md'), 'utf8');
  const serverBlock = block(readme, 'server');
  const clientBlock = block(readme, 'client');
  expect(serverBlock.trim()).toBe('npm ci && npm start');

  const checkout = await freshCheckout();
  expect(existsSync(path.join(checkout, 'node_modules'))).toBe(false);
  // As root: the embedded PostgreSQL's binaries and store go to a place of this checkout's own (src/db/embeddedPlace.ts), removed at the end.
  const place = asRoot ? placeOf(checkout) : undefined;
  const port = await freePort();
  // The newcomer's environment: none of the service's variables (CI sets DATABASE_URL); the
  // ports free ones, where the README's are the defaults (3000, and 9464 for metrics).
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  const env = { ...inherited, PORT: String(port), METRICS_PORT: String(await freePort()) };

  // The first terminal: a process group of its own, so that Ctrl-C reaches npm and the server as in a terminal.
  const server = spawn('bash', ['-c', serverBlock], { cwd: checkout, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  server.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  server.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    // npm ci, then the compile in npm start, then the first start of the embedded store.
    const started = await waitFor(() => /No API key yet/.test(output) || server.exitCode !== null, 600_000, 500);
    expect(started && server.exitCode === null, output).toBe(true);
    // Its output is a pipe here, not a terminal: no key printed (it would land in a log), the command to make one instead.
    expect(output).toContain('No API key yet. Create one with: npm run --silent apikey -- create --plan free\n');
    expect(output).not.toMatch(/as_[A-Za-z0-9_-]{43}/);

    // The second terminal: the client block, against this server.
    const client = clientBlock.replaceAll('127.0.0.1:3000', `127.0.0.1:${port}`);
    const result = await run('bash', ['-e', '-o', 'pipefail', '-c', client], { cwd: checkout, env, timeout: 120_000 }).catch(
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    const { stdout } = result;
    expect('code' in result ? result.code : 0, `${stdout}\n${result.stderr}`).toBe(0);
    expect(stdout).toContain('{"id":1,"name":"Rex","categoryId":7,"status":"available"}');
    expect(stdout).toContain('{"id":2,"name":"Kit","categoryId":3,"status":"pending"}');
    expect(stdout).toContain('HTTP/1.1 200 OK');
    expect(stdout).toContain(`link: <http://127.0.0.1:${port}/v1/pets?limit=1&cursor=`);
    // The followed link gave the second page: Kit alone.
    expect(stdout.trim().split('\n').at(-1)).toBe('[{"id":2,"name":"Kit","categoryId":3,"status":"pending"}]');

    // Swagger UI, where the README sends people next.
    const docs = await fetch(`http://127.0.0.1:${port}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toMatch(/swagger-ui/i);
    if (place) {
      // The private folder as it was; ./data a link to the store in the checkout's place.
      expect(statSync(path.dirname(checkout)).mode & 0o777).toBe(0o700);
      expect(lstatSync(path.join(checkout, 'data')).isSymbolicLink()).toBe(true);
      expect(readlinkSync(path.join(checkout, 'data'))).toBe(path.join(place, 'data'));
      expect(place.startsWith(`${PLACES}/`)).toBe(true);
    }
  } finally {
    // Ctrl-C in the first terminal.
    process.kill(-server.pid!, 'SIGINT');
    await stop(server, { signal: 'SIGINT', graceMs: 60_000 });
    if (place) await rm(place, { recursive: true, force: true });
  }
  expect(await canConnect(port)).toBe(false);
}, 900_000);
