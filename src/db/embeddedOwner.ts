import { rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { StartupError } from '../startupError.js';

/**
 * The Unix socket in DATA_DIR that the server using the embedded PostgreSQL there listens on
 * while it runs. Listening is the claim: the kernel refuses a second listener, and the claim
 * ends with the process however it ends (a socket file left by one that was killed answers
 * ECONNREFUSED, so it is removed and claimed again). Asked, it answers who holds it.
 */
export const OWNER_SOCKET = 'animal-store.sock';

export interface Owner {
  pid: number;
  /** The port it listens on (PORT), unless that was 0 (any free one). */
  port?: number;
  /** Its metrics listener's (METRICS_PORT), when it has one on a set port. */
  metricsPort?: number;
}

/** What a server claiming a store says of itself. */
export type Claimant = Omit<Owner, 'pid'>;

/** How long an owner that accepts the connection has to say who it is (the kernel accepts for a process that hangs). */
const ANSWER_MS = 2000;

function listen(file: string, answer: string): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.on('error', () => {}).end(answer));
    server.once('error', reject);
    server.listen(file, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** The owner listening on `file`; 'alive' if it accepts but does not say who it is; undefined if nobody listens there. */
function askAt(file: string): Promise<Owner | 'alive' | undefined> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect(file);
    socket.setTimeout(ANSWER_MS, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('close', () => {
      try {
        const owner = JSON.parse(text) as Owner;
        resolve(Number.isSafeInteger(owner.pid) ? owner : 'alive');
      } catch {
        resolve('alive');
      }
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      socket.removeAllListeners('close');
      if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') resolve(undefined);
      else if (err.code === 'EACCES') resolve('alive'); // another user's server
      else reject(err);
    });
  });
}

/** The server holding the embedded store in `dataDir`, asked without claiming it; undefined if none (or no store there). */
export function ownerOf(dataDir: string): Promise<Owner | 'alive' | undefined> {
  return askAt(path.join(path.resolve(dataDir), OWNER_SOCKET)).catch(() => undefined);
}

/** The sentence that refuses a second server on one embedded store. */
export function anotherServer(owner: Owner | 'alive', dataDir: string): string {
  const who = owner === 'alive' ? '' : ` (pid ${owner.pid}${owner.port ? `, port ${owner.port}` : ''})`;
  return (
    `Another Animal Store server${who} is already running on the embedded PostgreSQL in ${dataDir}; ` +
    'stop it, or start this one with another DATA_DIR (or a DATABASE_URL).'
  );
}

/**
 * Claims the embedded store in `dataDir` for this server, or fails with a StartupError naming
 * the server that holds it: two servers on one store would share one PostgreSQL, which the
 * first stops when it stops, and run two sets of webhook workers. Commands (npm run apikey,
 * npm run migrate) claim nothing: they use a running server's PostgreSQL. Resolves with the
 * release.
 */
export async function claimEmbedded(dataDir: string, me: Claimant): Promise<() => Promise<void>> {
  const file = path.join(path.resolve(dataDir), OWNER_SOCKET);
  const answer = JSON.stringify({ pid: process.pid, port: me.port || undefined, metricsPort: me.metricsPort || undefined } satisfies Owner);
  for (let attempt = 0; ; attempt++) {
    try {
      const server = await listen(file, answer);
      server.unref(); // the claim never keeps the process alive
      return () => new Promise((resolve) => server.close(() => resolve()));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 0) throw err;
    }
    const owner = await askAt(file);
    if (owner !== undefined) throw new StartupError(anotherServer(owner, dataDir));
    await rm(file, { force: true }); // left by a server that died
  }
}
