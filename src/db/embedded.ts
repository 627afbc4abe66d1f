import { mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/** Fixed port number in the socket's file name, as libpq names sockets (`.s.PGSQL.<port>`). */
export const EMBEDDED_SOCKET_PORT = 5432;

export interface EmbeddedServer {
  /** Directory holding the Unix socket: pg's `host` for this store. */
  socketDir: string;
  close(): Promise<void>;
}

export function socketPath(dataDir: string): string {
  return path.join(path.resolve(dataDir), `.s.PGSQL.${EMBEDDED_SOCKET_PORT}`);
}

/** True when another process (a running server) is serving this data directory. */
export function isHeld(dataDir: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath(dataDir));
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Opens PGlite on dataDir and serves it on a Unix socket inside dataDir, so the
 * service (and `npm run apikey` while the server runs) talk to it through `pg`
 * exactly as to Postgres.
 */
export async function startEmbedded(dataDir: string): Promise<EmbeddedServer> {
  const dir = path.resolve(dataDir);
  if (await isHeld(dir)) {
    throw new Error(`The embedded database in ${dir} is in use by another process. Stop it, or set DATABASE_URL.`);
  }
  await mkdir(dir, { recursive: true });
  const sock = socketPath(dir);
  await rm(sock, { force: true }); // left by a process that did not stop cleanly
  const db = await PGlite.create(path.join(dir, 'pgdata'));
  // PGlite has one session; the socket server multiplexes clients and keeps transactions apart.
  const server = new PGLiteSocketServer({ db, path: sock, maxConnections: 64 });
  await server.start();
  return {
    socketDir: dir,
    async close() {
      await server.stop();
      await db.close();
      await rm(sock, { force: true });
    },
  };
}
