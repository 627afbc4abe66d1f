import { spawn } from 'node:child_process';
import { chmod, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { findBinary } from './binaries.js';
import { forget, remember } from './cleanup.js';
import { freePort } from './ports.js';
import { postgresAnswers } from './probes.js';
import { awaitDaemon, stop } from './processes.js';
import { scratchDir } from './scratchDir.js';

export interface PgBouncer {
  /** The same database as the upstream URL, reached through PgBouncer. */
  url: string;
  /** Server connections PgBouncer opens per database and user. */
  poolSize: number;
  stop(): Promise<void>;
}

/** Debian installs it in /usr/sbin, which a non-root PATH may lack. */
export const findPgBouncer = () => findBinary('pgbouncer');

/**
 * Starts a PgBouncer of its own in transaction pooling mode in front of the database of
 * `upstreamUrl`, on a free port of 127.0.0.1, and waits until it answers a query through it.
 * Clients are trusted (it listens on loopback only); a small pool makes many client
 * connections share few server sessions, which is what breaks session state.
 */
export async function startPgBouncer(upstreamUrl: string, { poolSize = 4 }: { poolSize?: number } = {}): Promise<PgBouncer> {
  const binary = await findPgBouncer();
  if (!binary) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username) || 'postgres';
  const dbname = decodeURIComponent(upstream.pathname.slice(1));
  const port = await freePort();
  const dir = await scratchDir('as-pgbouncer-');
  const server = [`host=${upstream.hostname}`, `port=${upstream.port || 5432}`, `dbname=${dbname}`, `user=${user}`];
  if (upstream.password) server.push(`password=${decodeURIComponent(upstream.password)}`);
  const ini = [
    '[databases]',
    `${dbname} = ${server.join(' ')}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${poolSize}`,
    'max_client_conn = 500',
    // Up to 8 migrators wait on one lock while holding server sessions; nobody else should wait long.
    'query_wait_timeout = 30',
  ];
  await writeFile(path.join(dir, 'pgbouncer.ini'), `${ini.join('\n')}\n`);
  // trust still looks the user up in the auth file.
  await writeFile(path.join(dir, 'userlist.txt'), `"${user}" ""\n`);
  // PgBouncer refuses to run as root: it drops to nobody then, who must read the files.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await Promise.all([chmod(dir, 0o755), chmod(path.join(dir, 'pgbouncer.ini'), 0o644), chmod(path.join(dir, 'userlist.txt'), 0o644)]);
  const child = spawn(binary, [...(asRoot ? ['-u', 'nobody'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4000)));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(dbname)}`;
  const noted = `process ${child.pid}`;
  const cleanUp = async () => {
    forget(noted);
    await stop(child, { graceMs: 5000 });
    await rm(dir, { recursive: true, force: true });
  };
  remember(noted, `stop pgbouncer (pid ${child.pid})`, cleanUp);
  await awaitDaemon('pgbouncer', child, { answers: () => postgresAnswers(url, 1000), log: () => log, cleanUp, waitingFor: `answer on port ${port}` });
  return { url, poolSize, stop: cleanUp };
}
