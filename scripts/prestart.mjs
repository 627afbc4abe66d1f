// `npm start`'s first step; plain JavaScript so it runs without devDependencies.
// With them, it first checks what would refuse the start (scripts/startCheck.ts), then compiles.
// A checkout with TypeScript installed (npm ci) compiles, as the README's quick start
// promises: only what changed (npm run build is tsc -b, its state in dist/.tsbuildinfo),
// so a second start with nothing changed compiles nothing, and says nothing (a start that
// compiles says so first, in one line). A production install (npm ci --omit=dev) cannot
// compile, so it starts the prebuilt dist/ and only checks that it and the files the server
// reads at run time (src/paths.ts) are there, failing with a message that says what is missing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function installed(name) {
  try {
    createRequire(path.join(root, 'package.json')).resolve(`${name}/package.json`);
    return true;
  } catch {
    return false;
  }
}

if (installed('typescript') && existsSync(path.join(root, 'tsconfig.build.json'))) {
  // `npm run build` stays the one definition of the build; npm_execpath is the npm running us.
  const npm = process.env.npm_execpath;
  const build = (extra, stdio) => {
    const args = ['run', '--silent', 'build', ...extra];
    return npm ? spawnSync(process.execPath, [npm, ...args], { cwd: root, stdio, encoding: 'utf8' }) : spawnSync('npm', args, { cwd: root, stdio, encoding: 'utf8' });
  };
  // Refused now rather than after the compile: another server on DATA_DIR, a port in use, a bad variable (scripts/startCheck.ts, run by tsx, installed with TypeScript).
  const check = spawnSync(process.execPath, ['--import', 'tsx', path.join(root, 'scripts/startCheck.ts')], { cwd: root, stdio: 'inherit' });
  if (check.status !== 0) process.exit(check.status ?? 1);
  // tsc -b --dry says whether anything would be compiled: only then is the wait worth a line (a first build takes a minute or more).
  if (/would build project/.test(build(['--', '--dry'], 'pipe').stdout ?? '')) {
    console.log('npm start: compiling the TypeScript sources into dist/ (the first time takes a minute or more; later starts compile only what changed, in seconds)...');
  }
  process.exit(build([], 'inherit').status ?? 1);
}

const hasFile = (dir, suffix) => existsSync(path.join(root, dir)) && readdirSync(path.join(root, dir)).some((f) => f.endsWith(suffix));
const needed = [
  ['dist/src/server.js', existsSync(path.join(root, 'dist/src/server.js'))],
  ['openapi.yaml', existsSync(path.join(root, 'openapi.yaml'))],
  ['src/db/migrations/*.sql', hasFile('src/db/migrations', '.sql')],
  ['src/ratelimit/*.lua', hasFile('src/ratelimit', '.lua')],
];
const missing = needed.filter(([, present]) => !present).map(([name]) => name);
if (missing.length > 0) {
  console.error(
    [
      'npm start: TypeScript is not installed here (a production install, npm ci --omit=dev), so nothing can be',
      'compiled, and the prebuilt server cannot start because this folder lacks:',
      ...missing.map((name) => `  - ${name}`),
      'Either install everything (npm ci) and run npm start again, or build elsewhere (npm ci && npm run build) and',
      "ship dist/ with openapi.yaml, src/db/migrations/ and src/ratelimit/*.lua, as the Dockerfile's final stage does.",
    ].join('\n'),
  );
  process.exit(1);
}
