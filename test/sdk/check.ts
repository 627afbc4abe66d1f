// npm run sdk:check: generates clients from openapi.yaml into a temporary folder, starts a fresh
// server, and drives each client through the same scenario with the driver in test/sdk/<lang>/.
// Prints one table (✓/✗ per cell) and exits non-zero if any cell is ✗. See docs/SDKS.md.
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createKey } from '../helpers/apiKeys.js';
import { remember, runCommand } from '../helpers/cleanup.js';
import { parseCommandLine } from '../../scripts/lib/cli.js';
import { startServer } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { projectRoot } from '../../src/paths.js';
import { loadDocument, operationsById, stabilityOf } from '../../src/openapi/document.js';
import { startHookReceiver } from './receiver.js';

const USAGE = `Usage: npm run sdk:check [-- --language <name>]

Generates clients from openapi.yaml (openapi-fetch for TypeScript; Redocly's generator for
Python, Go, Java and PHP) into a temporary folder, starts a fresh server on an embedded store of
its own (never DATABASE_URL's Postgres server) and a webhook receiver on 127.0.0.1,
drives each client through the same scenario and prints one table; exits 1 if any cell fails.
Toolchains: sh test/sdk/install-toolchains.sh (as root). Its server, receiver and folder (with
the store) are removed at the end, on failure and on Ctrl-C.
  --language  only this one (TypeScript, Python, Go, Java or PHP)
See docs/SDKS.md.`;
const { values: args } = parseCommandLine(USAGE, { options: { language: { type: 'string' } } });

const STEPS = ['list', 'create', 'get', 'errors', 'orders', 'conflicts', 'keys', 'lifecycle', 'webhooks'] as const;
const HEADINGS = [
  'Language',
  'Generation warnings',
  'list/pages',
  'create/replay',
  'get (deprecated)',
  'typed errors',
  'orders (experimental)',
  'order errors',
  'account keys',
  'update/delete/ETags',
  'events, webhooks',
];

/**
 * What each driver expects in API-Stability from the operations it checks it on, as openapi.yaml
 * marks them (its `x-badges`: `experimental`, `beta`; none: `stable`, which sends no header).
 */
const STABILITY_CHECKED = ['getAccount', 'listEvents', 'createWebhookEndpoint'];
const byId = operationsById(loadDocument());
const stabilityEnv = Object.fromEntries(
  STABILITY_CHECKED.map((id) => {
    const entry = byId.get(id);
    if (!entry) throw new Error(`openapi.yaml has no operation ${id}`);
    return [`SDK_STABILITY_${id.toUpperCase()}`, stabilityOf(entry.operation)];
  }),
);
const sdkDir = path.join(projectRoot, 'test', 'sdk');
const redocly = path.join(projectRoot, 'node_modules', '.bin', 'redocly');
const openapiTypescript = path.join(projectRoot, 'node_modules', '.bin', 'openapi-typescript');

interface Cell {
  ok: boolean;
  text: string;
}
interface Run {
  file: string;
  args: string[];
  env?: Record<string, string>;
}
interface Language {
  name: string;
  /** Generates the client into `dir`; resolves with the warnings of the generator. */
  generate(dir: string): Promise<string[]>;
  /** Compiles what needs compiling; resolves with the command that runs the driver. */
  build(dir: string): Promise<Run>;
}

function run(file: string, args: string[], options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? projectRoot, env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 180_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = (err as { code?: unknown } | null)?.code;
        resolve({ code: !err ? 0 : typeof code === 'number' ? code : 1, stdout, stderr: stderr || String(err?.message ?? '') });
      },
    );
  });
}

async function mustRun(file: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const res = await run(file, args, options);
  if (res.code !== 0) throw new Error(`${path.basename(file)} ${args[0] ?? ''} exited with ${res.code}: ${(res.stderr || res.stdout).trim()}`);
  return res;
}

/** Runs Redocly's generator for one language; the warnings are the findings of its --report. */
async function redoclyClient(dir: string, generator: string, extra: string[] = []): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const report = path.join(dir, 'report.json');
  await mustRun(redocly, ['generate-client', 'openapi.yaml', '--generator', generator, '-o', path.join(dir, 'client.ts'), '--report', report, ...extra]);
  const { apis } = JSON.parse(await readFile(report, 'utf8')) as { apis: { findings: { message: string }[] }[] };
  return apis.flatMap((api) => api.findings.map((f) => f.message.split(' — ')[0]!));
}

/** Fails with a hint when a toolchain is missing. */
async function need(command: string) {
  const res = await run('sh', ['-c', `command -v ${command}`]);
  if (res.code !== 0) throw new Error(`${command} not installed: run test/sdk/install-toolchains.sh`);
}

const ALL_LANGUAGES: Language[] = [
  {
    name: 'TypeScript',
    async generate(dir) {
      // The driver uses the committed generated/openapi.ts: check it is what openapi.yaml generates now.
      await mkdir(dir, { recursive: true });
      const out = path.join(dir, 'openapi.ts');
      // As `npm run generate` (a free-form object such as Event.data.object is Record<string, unknown>).
      const res = await mustRun(openapiTypescript, ['openapi.yaml', '--empty-objects-unknown', '-o', out]);
      const warnings = `${res.stdout}\n${res.stderr}`.split('\n').filter((line) => /warn/i.test(line));
      if ((await readFile(out, 'utf8')) !== (await readFile(path.join(projectRoot, 'generated', 'openapi.ts'), 'utf8'))) {
        warnings.push('generated/openapi.ts is stale: run npm run generate');
      }
      return warnings;
    },
    async build() {
      return { file: process.execPath, args: ['--import', 'tsx', path.join(sdkDir, 'typescript', 'driver.ts')] };
    },
  },
  {
    name: 'Python',
    generate: (dir) => redoclyClient(dir, 'python'),
    async build(dir) {
      // Debian's interpreter, which has python3-httpx (a pyenv or venv python3 on PATH may not).
      const python = '/usr/bin/python3';
      await mustRun(python, ['-c', 'import httpx']).catch(() => {
        throw new Error('python3-httpx not installed: run test/sdk/install-toolchains.sh');
      });
      return { file: python, args: [path.join(sdkDir, 'python', 'driver.py')], env: { PYTHONPATH: dir, PYTHONDONTWRITEBYTECODE: '1' } };
    },
  },
  {
    name: 'Go',
    generate: (dir) => redoclyClient(path.join(dir, 'client'), 'go', ['--go-package', 'client']),
    async build(dir) {
      await need('go');
      await writeFile(path.join(dir, 'go.mod'), 'module sdkcheck\n\ngo 1.19\n');
      await copyFile(path.join(sdkDir, 'go', 'main.go'), path.join(dir, 'main.go'));
      const env = { GOFLAGS: '-mod=mod', GOPROXY: 'off', GOTOOLCHAIN: 'local' };
      await mustRun('go', ['build', '-o', 'driver', '.'], { cwd: dir, env });
      return { file: path.join(dir, 'driver'), args: [] };
    },
  },
  {
    name: 'Java',
    generate: (dir) => redoclyClient(dir, 'java'),
    async build(dir) {
      await need('javac');
      await mustRun('javac', ['-nowarn', '-d', path.join(dir, 'classes'), path.join(dir, 'Client.java'), path.join(sdkDir, 'java', 'Driver.java')]);
      return { file: 'java', args: ['-cp', path.join(dir, 'classes'), 'Driver'] };
    },
  },
  {
    name: 'PHP',
    generate: (dir) => redoclyClient(dir, 'php'),
    async build(dir) {
      await need('php');
      const res = await run('php', ['-r', 'exit(extension_loaded("curl") ? 0 : 1);']);
      if (res.code !== 0) throw new Error('php-curl not installed: run test/sdk/install-toolchains.sh');
      return { file: 'php', args: [path.join(sdkDir, 'php', 'driver.php')], env: { SDK_CLIENT: path.join(dir, 'client.php') } };
    },
  },
];
const languages = ALL_LANGUAGES.filter((lang) => !args.language || lang.name.toLowerCase() === args.language.toLowerCase());
if (languages.length === 0) {
  process.stderr.write(`No such language: ${args.language}\n\n${USAGE}\n`);
  process.exit(2);
}

function short(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Generates and builds one client: the warnings cell, and the driver or the cell of every step when it cannot run. */
async function prepare(lang: Language, dir: string): Promise<{ warningCell: Cell; driver?: Run; stepCell?: Cell }> {
  let warnings: string[];
  try {
    warnings = await lang.generate(dir);
  } catch (err) {
    return { warningCell: { ok: false, text: `✗ generation failed: ${short((err as Error).message)}` }, stepCell: { ok: false, text: '✗ no client' } };
  }
  const warningCell = warnings.length === 0 ? { ok: true, text: '✓ 0' } : { ok: false, text: `✗ ${warnings.length}: ${short(warnings.join('; '), 100)}` };
  try {
    return { warningCell, driver: await lang.build(dir) };
  } catch (err) {
    return { warningCell, stepCell: { ok: false, text: `✗ ${short((err as Error).message)}` } };
  }
}

/** Runs one driver; one cell per step. */
async function drive(driver: Run, env: Record<string, string>): Promise<Cell[]> {
  const res = await run(driver.file, driver.args, { env: { ...env, ...driver.env }, timeoutMs: 180_000 });
  const results = new Map<string, Cell>();
  for (const [, step, outcome, detail] of res.stdout.matchAll(/^RESULT (\S+) (ok|fail) ?(.*)$/gm)) {
    results.set(step!, { ok: outcome === 'ok', text: `${outcome === 'ok' ? '✓' : '✗'} ${short(detail!)}` });
  }
  const missing = `✗ driver exited with ${res.code} before this step: ${short(res.stderr.split('\n').filter(Boolean).slice(-3).join(' '))}`;
  return STEPS.map((step) => results.get(step) ?? { ok: false, text: missing });
}

function printTable(rows: string[][]) {
  const widths = HEADINGS.map((_, i) => Math.max(...[HEADINGS, ...rows].map((row) => [...row[i]!].length)));
  const line = (row: string[]) => `| ${row.map((cell, i) => cell + ' '.repeat(widths[i]! - [...cell].length)).join(' | ')} |`;
  console.log([line(HEADINGS), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n'));
}

// The server (its embedded store with it), the receiver and the folder are undone at the end, on failure and on Ctrl-C (helpers/cleanup.ts).
await runCommand(async () => {
  const started = Date.now();
  const tmp = await scratchDir('sdk-check-');
  // A Postgres server of its own (the embedded store), never DATABASE_URL's: an event is listed
  // only once every write transaction open on the server before it has ended, so a shared
  // server's other clients (another test run holding one open) could hold the events step back
  // past any bound the drivers wait.
  const storeEnv = { DATA_DIR: path.join(tmp, 'data') };
  // Webhooks go to a receiver on 127.0.0.1, which only WEBHOOK_ALLOW_PRIVATE_TARGETS permits.
  const receiver = await startHookReceiver();
  remember('sdk-check-receiver', 'the webhook receiver', receiver.close);
  const webhookEnv = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') };
  const server = await startServer('src/server.ts', { ...storeEnv, ...webhookEnv, LOG_LEVEL: 'warn' }, { stdout: 'ignore' });
  const [key, ...tinyKeys] = await Promise.all([
    createKey(storeEnv, { plan: 'enterprise', name: 'sdk-check', perMinute: 10_000, perDay: 100_000 }),
    ...languages.map((lang) => createKey(storeEnv, { plan: 'enterprise', name: `sdk-check-tiny-${lang.name}`, perMinute: 3, perDay: 1000 })),
  ]);
  // Generation and compilation in parallel; the drivers one after the other, so their pages do not interleave.
  const prepared = await Promise.all(languages.map((lang) => prepare(lang, path.join(tmp, lang.name.toLowerCase()))));
  const rows: string[][] = [];
  let failed = false;
  for (const [i, lang] of languages.entries()) {
    const { warningCell, driver, stepCell } = prepared[i]!;
    const name = lang.name.toLowerCase();
    const env = {
      SDK_BASE_URL: `${server.baseUrl}/v1`,
      SDK_KEY: key!,
      SDK_TINY_KEY: tinyKeys[i]!,
      // A category of its own (random: no other pet of the run has it), above 2^40 so that every SDK carries it as a 64-bit integer.
      SDK_CATEGORY: String(randomInt(2 ** 40, 2 ** 47)),
      SDK_PREFIX: `sdk-${name}-${process.pid}`,
      SDK_HOOK_URL: `${receiver.baseUrl}/hook/${name}`,
      SDK_RECEIVED_URL: `${receiver.baseUrl}/received/${name}/`,
      ...stabilityEnv,
    };
    const cells = driver ? await drive(driver, env) : STEPS.map(() => stepCell!);
    rows.push([lang.name, ...[warningCell, ...cells].map((cell) => cell.text)]);
    if (!warningCell.ok || cells.some((cell) => !cell.ok)) failed = true;
  }
  printTable(rows);
  console.log(`sdk:check ${failed ? 'FAILED' : 'passed'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return failed ? 1 : 0;
});
