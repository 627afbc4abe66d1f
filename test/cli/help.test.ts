import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { scratchDir, SCRATCH_ROOT_VARIABLE } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';
import { markedProcesses, RUN_VARIABLE } from '../helpers/testRun.js';

/*
 * Every command of this repository answers --help and -h with its usage and exit 0, without
 * doing anything (no database, no process, no folder); an unknown argument gets the usage
 * and exit 2. The commands are found, not listed by hand: every npm script that runs a file
 * of the repository, and every such file the README and docs/ tell people to run.
 */

const scripts = (JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
/** A command line that runs a file of this repository (the rest of the scripts run tools: tsc, vitest, redocly…). */
const RUNS_OURS = /^(?:exec )?(?:tsx|node|bash|sh) ((?:scripts|src|dist|bench|test)\/\S+)/;
/** npm runs these before their script without its arguments; `npm start` compiles first, so the server is asked directly. */
const NOT_THROUGH_NPM: Record<string, string> = { prestart: 'a hook of npm start', start: 'src/server.ts is asked directly below' };
const npmScripts = Object.entries(scripts)
  .filter(([name, command]) => RUNS_OURS.test(command) && !(name in NOT_THROUGH_NPM))
  .map(([name]) => name);

/** Files people are told to run themselves, each as they are told to (README.md, docs/, deploy/). */
const DOCUMENTED = /(?:npx tsx|npx --no-install tsx|node --import tsx|node|bash|sh) ((?:scripts|src|dist|bench|test)\/[\w/.-]+\.(?:ts|js|sh|mjs))/g;
const docs = ['README.md', ...readdirSync(path.join(projectRoot, 'docs')).map((f) => `docs/${f}`), 'deploy/kubernetes/README.md'];
const documented = [...new Set(docs.flatMap((file) => [...readFileSync(path.join(projectRoot, file), 'utf8').matchAll(DOCUMENTED)].map((m) => m[1]!)))];
/** dist/… is the compiled form of a source file; the source is what is run here. */
const sourceOf = (file: string) => file.replace(/^dist\/(.*)\.js$/, '$1.ts');
/** The files an npm script runs (for documented files that are npm scripts already). */
const scriptFiles = new Set(Object.values(scripts).flatMap((command) => [...command.matchAll(new RegExp(RUNS_OURS.source.slice(1), 'g'))].map((m) => sourceOf(m[1]!))));
const files = [...new Set(['src/server.ts', ...documented.map(sourceOf)])].filter((file) => file === 'src/server.ts' || !scriptFiles.has(file)).sort();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** What the command left: files in its TMPDIR, its scratch root, its DATA_DIR; processes with its marker. */
  left: string[];
}

let sandbox: string;
let closedPort: number;
let runs = 0;
beforeAll(async () => {
  sandbox = await scratchDir('as-help-');
  closedPort = await freePort();
});

/**
 * Runs a command in a sandbox where doing anything would show: its databases point at a port
 * nobody listens on, DATA_DIR, TMPDIR and the scratch root at empty folders of its own, and
 * every process it starts carries a marker of its own.
 */
async function run(argv: string[]): Promise<Run> {
  const n = runs++;
  const dir = path.join(sandbox, String(n));
  const [scratch, data] = ['scratch', 'data'].map((name) => path.join(dir, name)) as [string, string];
  // One TMPDIR for all: tsx keeps its cache of compiled files there (a cold cache costs seconds a run).
  const tmp = path.join(sandbox, 'tmp');
  await mkdir(tmp, { recursive: true });
  await mkdir(scratch, { recursive: true });
  const marker = `help-${process.pid}-${n}`;
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  const nowhere = `postgres://postgres@127.0.0.1:${closedPort}/nowhere`;
  const env = {
    ...inherited,
    DATABASE_URL: nowhere,
    BENCH_DATABASE_URL: nowhere,
    REDIS_URL: `redis://127.0.0.1:${closedPort}`,
    BENCH_REDIS_URL: `redis://127.0.0.1:${closedPort}`,
    DATA_DIR: data,
    TMPDIR: tmp,
    [SCRATCH_ROOT_VARIABLE]: scratch,
    [RUN_VARIABLE]: marker,
  };
  const { code, stdout, stderr } = await new Promise<Omit<Run, 'left'>>((resolve) => {
    execFile(argv[0]!, argv.slice(1), { cwd: projectRoot, env, timeout: 60_000 }, (err, out, errOut) => {
      const status = (err as { code?: unknown } | null)?.code;
      resolve({ code: !err ? 0 : typeof status === 'number' ? status : -1, stdout: out, stderr: errOut });
    });
  });
  // Caches of the tools, not the command's doing: tsx's compiled files, and the compile cache npm
  // turns on where Node has one (Node ≥ 22.1: `node-compile-cache`).
  const made = [...(await readdir(tmp)).filter((f) => !f.startsWith('tsx-') && f !== 'node-compile-cache'), ...(await readdir(scratch)), ...(await readdir(dir)).filter((f) => f === 'data')];
  const processes = markedProcesses(marker).map((pid) => `process ${pid}`);
  for (const pid of markedProcesses(marker)) process.kill(pid, 'SIGKILL');
  return { code, stdout, stderr, left: [...made, ...processes] };
}

const npmRun = (name: string, ...args: string[]) => ['npm', 'run', '--silent', name, '--', ...args];
const direct = (file: string, ...args: string[]) =>
  file.endsWith('.sh') ? [file.includes('/sdk/') ? 'sh' : 'bash', file, ...args] : [process.execPath, '--import', 'tsx', file, ...args];

describe('the commands found', () => {
  it('include every script of package.json that runs a file of this repository, and the files the docs say to run', () => {
    expect(npmScripts).toEqual(expect.arrayContaining(['apikey', 'migrate', 'bench', 'sdk:check', 'image:check', 'deploy:check', 'dev']));
    expect(files).toEqual(expect.arrayContaining(['src/server.ts', 'test/deploy/k8s-check.ts', 'test/sdk/install-toolchains.sh']));
  });
});

const commands: Array<[string, (...args: string[]) => string[]]> = [
  ...npmScripts.map((name): [string, (...args: string[]) => string[]] => [`npm run ${name}`, (...args) => npmRun(name, ...args)]),
  ...files.map((file): [string, (...args: string[]) => string[]] => [file, (...args) => direct(file, ...args)]),
];

describe.concurrent.each(commands)('%s', (_name, command) => {
  it.each(['--help', '-h'])('%s: prints its usage on stdout and exits 0, having made nothing', async (flag) => {
    const res = await run(command(flag));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^Usage: /);
    expect(res.left).toEqual([]);
  });

  it('an unknown argument: prints what is wrong and the usage on stderr, exits 2, having made nothing', async () => {
    const res = await run(command('--no-such-option'));
    expect(res.code, res.stdout + res.stderr).toBe(2);
    expect(res.stderr).toMatch(/--no-such-option[\s\S]*Usage: /);
    expect(res.stdout).toBe('');
    expect(res.left).toEqual([]);
  });
});
