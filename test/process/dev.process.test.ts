import { spawn } from 'node:child_process';
import { cp, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { canConnect, freePort } from '../helpers/ports.js';
import { stop } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

/** What `npm run dev` reads, copied (openapi.yaml is edited here), with this checkout's node_modules. */
async function copyOfTheRepository(): Promise<string> {
  const copy = await scratchDir('as-dev-');
  for (const entry of ['package.json', 'openapi.yaml', 'tsconfig.json', 'src', 'scripts', 'generated']) {
    await cp(path.join(projectRoot, entry), path.join(copy, entry), { recursive: true });
  }
  await symlink(path.join(projectRoot, 'node_modules'), path.join(copy, 'node_modules'));
  return copy;
}

it('npm run dev restarts the server and regenerates generated/ when openapi.yaml changes, and stops on Ctrl-C', async () => {
  const copy = await copyOfTheRepository();
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  // A process group of its own: Ctrl-C in a terminal signals the whole group (npm, tsx, the server).
  const dev = spawn('npm', ['run', 'dev'], {
    cwd: copy,
    env: { ...inherited, PORT: String(port), METRICS_PORT: '0', DATA_DIR: path.join(copy, 'data'), LOG_LEVEL: 'warn' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  dev.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  dev.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const served = async (text: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/openapi.json`).catch(() => undefined);
    return res?.status === 200 && (await res.text()).includes(text);
  };
  try {
    const before = 'Returns animals ordered by `id` ascending';
    const after = 'Returns the animals ordered by `id` ascending';
    expect(await waitFor(() => served(before), 90_000, 250), output).toBe(true);

    const document = path.join(copy, 'openapi.yaml');
    await writeFile(document, (await readFile(document, 'utf8')).replace(before, after));

    const generated = async () => (await readFile(path.join(copy, 'generated', 'openapi.ts'), 'utf8')).includes(after);
    expect(await waitFor(async () => (await served(after)) && (await generated()), 90_000, 250), output).toBe(true);
    expect(output).toContain('[dev] openapi.yaml changed: generated/openapi.ts regenerated');
  } finally {
    process.kill(-dev.pid!, 'SIGINT');
    await stop(dev, { signal: 'SIGINT', graceMs: 30_000 });
  }
  expect(await canConnect(port)).toBe(false);
}, 240_000);
