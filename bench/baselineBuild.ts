/**
 * The baseline build: an earlier revision of the service (by default main before issue 35, with
 * its id-order lock), checked out into a temporary git worktree, installed and built the way
 * targets.ts builds this checkout, so that one run measures today's service against it.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, symlink, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import { forget, remember } from '../test/helpers/cleanup.js';

export interface BaselineBuild {
  /** The revision as given (`--baseline-build`). */
  rev: string;
  /** The commit it names, in full and abbreviated, and its subject line. */
  sha: string;
  commit: string;
  subject: string;
  /** The worktree's root: its dist/src/server.js is the baseline server, its dist/scripts/ its migrate and apikey. */
  root: string;
  /** How its node_modules came about: this checkout's, linked (identical package-lock.json), or its own `npm ci`. */
  modules: 'linked' | 'npm ci';
  /** Removes the worktree (also done by the command's clean-up on failure and Ctrl-C). */
  remove(): Promise<void>;
}

/** Runs a command to completion, its output on our stderr (stdout is the report's); rejects on a non-zero exit. */
function run(command: string, args: string[], cwd: string, capture = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', capture ? 'pipe' : 2, 2] });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve(out.trim()) : reject(new Error(`${command} ${args.join(' ')} (in ${cwd}) exited with ${code ?? signal}`)),
    );
  });
}

const git = (args: string[], capture = true) => run('git', args, projectRoot, capture);
const lockfileHash = (root: string) => {
  const file = path.join(root, 'package-lock.json');
  return existsSync(file) ? createHash('sha256').update(readFileSync(file)).digest('hex') : 'none';
};

/** The full hash of the commit `rev` names in this repository, if it names one. */
export const commitOf = (rev: string): Promise<string | undefined> => git(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => undefined);

let made = 0;

/**
 * `git worktree add --detach <tmp> <rev>`, then its node_modules (a link to this checkout's when
 * both package-lock.json files hash the same, else `npm ci`), then `npm run build` there.
 */
export async function prepareBaselineBuild(rev: string, log: (msg: string) => void): Promise<BaselineBuild> {
  const sha = await commitOf(rev);
  if (!sha) throw new Error(`--baseline-build ${rev}: not a commit of this repository`);
  const commit = await git(['rev-parse', '--short', sha]);
  const subject = await git(['log', '-1', '--format=%s', commit]);
  const parent = await mkdtemp(path.join(os.tmpdir(), 'as-bench-baseline-'));
  const root = path.join(parent, 'checkout');
  let added = false;
  const key = `baseline worktree ${made++}`;
  let removing: Promise<void> | undefined;
  const remove = () => (removing ??= undo());
  const undo = async () => {
    forget(key);
    // The link first, by itself: nothing that removes the tree may ever reach this checkout's node_modules through it.
    const modules = path.join(root, 'node_modules');
    if (existsSync(modules) && lstatSync(modules).isSymbolicLink()) await unlink(modules);
    if (added) await git(['worktree', 'remove', '--force', root]).catch(() => {});
    await rm(parent, { recursive: true, force: true });
    await git(['worktree', 'prune']).catch(() => {});
  };
  remember(key, `remove the baseline worktree ${root}`, remove);
  try {
    log(`Baseline build: ${rev} = ${commit} "${subject.slice(0, 80)}", checked out in ${root}…`);
    await git(['worktree', 'add', '--detach', root, commit], false);
    added = true;
    let modules: BaselineBuild['modules'];
    if (lockfileHash(root) === lockfileHash(projectRoot) && existsSync(path.join(projectRoot, 'node_modules'))) {
      await symlink(path.join(projectRoot, 'node_modules'), path.join(root, 'node_modules'), 'dir');
      modules = 'linked';
      log('  its package-lock.json is this checkout\'s (same SHA-256): node_modules linked');
    } else {
      log('  its package-lock.json differs from this checkout\'s: npm ci…');
      await run('npm', ['ci', '--no-audit', '--no-fund'], root);
      modules = 'npm ci';
    }
    log('  npm run build…');
    await run('npm', ['run', '--silent', 'build'], root);
    const needed = ['dist/src/server.js', 'dist/scripts/migrate.js', 'dist/scripts/apikey.js'].filter((f) => !existsSync(path.join(root, f)));
    if (needed.length) throw new Error(`--baseline-build ${rev}: its build has no ${needed.join(', ')}; the baseline must be a revision with accounts and webhooks (issue 28 or later)`);
    return { rev, sha, commit, subject, root, modules, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
