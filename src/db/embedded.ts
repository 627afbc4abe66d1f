import { constants } from 'node:fs';
import { access, mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import type { EventLoopUtilization } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { PGlite } from '@electric-sql/pglite';
import { StartupError } from '../startupError.js';
import { explainDataDirFailure } from './openErrors.js';

/** Fixed port number in the socket's file name, as libpq names sockets (`.s.PGSQL.<port>`). */
export const EMBEDDED_SOCKET_PORT = 5432;

export interface EmbeddedServer {
  /** Directory holding the Unix socket: pg's `host` for this store. */
  socketDir: string;
  close(): Promise<void>;
}

/** The store served by a thread of its own (startEmbedded). */
export interface EmbeddedThread extends EmbeddedServer {
  /** How busy the store's thread has been (Node's event-loop utilization of that thread). */
  eventLoopUtilization(previous?: EventLoopUtilization): EventLoopUtilization;
}

/** The store served in the calling thread (serveEmbedded): the instance is at hand. */
export interface EmbeddedInThread extends EmbeddedServer {
  db: PGlite;
}

/** pg settings for the store in dataDir: its Unix socket. */
export function embeddedConnection(dataDir: string) {
  return { host: path.resolve(dataDir), port: EMBEDDED_SOCKET_PORT, user: 'postgres', database: 'postgres' };
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

function inUse(dir: string): Error {
  return new StartupError(
    `The embedded database in ${dir} (DATA_DIR) is in use by another process, most likely a server already running. Stop it, or set DATA_DIR to another folder (or DATABASE_URL).`,
  );
}

/** The folder exists (or is made) and this user may write in it; else a StartupError naming DATA_DIR. */
async function ensureWritable(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    throw explainDataDirFailure(err as Error, dir) ?? err;
  }
}

const WORKER_TAG = 'animal-store-embedded-database';
const CLOSE_TIMEOUT_MS = 15_000;

/**
 * Opens PGlite on dataDir in a worker thread of this process and serves it on a Unix socket
 * inside dataDir, so the service (and `npm run apikey` while the server runs) talk to it
 * through `pg` exactly as to Postgres.
 *
 * A thread of its own because PGlite is Postgres compiled to WASM, run synchronously: in the
 * server's thread every statement would stop the HTTP work for its whole duration, and that
 * thread's CPU would be shared between the two. In its own thread it runs beside the HTTP
 * work, on another core, as a Postgres backend does (measured in bench/pgliteBreakdown.ts).
 * `onError`: the thread stopped on its own (queries fail from then on).
 */
export async function startEmbedded(dataDir: string, onError?: (err: Error) => void): Promise<EmbeddedThread> {
  const dir = path.resolve(dataDir);
  if (await isHeld(dir)) throw inUse(dir);
  // Before PGlite: its own file-system errors carry no message, and a screen of its source with them.
  await ensureWritable(dir);
  const worker = spawnWorker({ tag: WORKER_TAG, dir });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (m: { error?: { message: string; stack?: string } }) =>
        m.error ? reject(new StartupError(`${m.error.message} (DATA_DIR)`, { cause: m.error.stack })) : resolve(),
      );
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`The embedded database thread exited (code ${code}) while opening ${dir}.`)));
    });
  } catch (err) {
    await worker.terminate();
    throw err;
  }
  for (const event of ['message', 'error', 'exit']) worker.removeAllListeners(event);
  let closing = false;
  worker.on('error', (err) => onError?.(err));
  worker.on('exit', (code) => {
    if (!closing) onError?.(new Error(`The embedded database thread exited (code ${code}).`));
  });
  return {
    socketDir: dir,
    eventLoopUtilization: (previous) => worker.performance.eventLoopUtilization(previous),
    async close() {
      if (closing) return;
      closing = true;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), CLOSE_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** This module as a worker; from TypeScript (tsx, vitest) the thread first registers tsx's loader. */
function spawnWorker(data: { tag: string; dir: string }): Worker {
  const self = new URL(import.meta.url);
  if (!self.pathname.endsWith('.ts')) return new Worker(self, { workerData: data });
  const boot = `import(${JSON.stringify(tsxApi())}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(self.href)}))`;
  return new Worker(boot, { eval: true, workerData: data });
}

function tsxApi(): string {
  try {
    return import.meta.resolve('tsx/esm/api');
  } catch {
    // Vitest's module runner has no import.meta.resolve; tsx ships its ESM entry beside the CommonJS one.
    return pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  }
}

if (!isMainThread && (workerData as { tag?: string } | null)?.tag === WORKER_TAG) {
  const port = parentPort!;
  serveEmbedded((workerData as { dir: string }).dir).then(
    (server) => {
      port.postMessage({});
      port.once('message', () => {
        void server.close().finally(() => port.close());
      });
    },
    (err: unknown) => {
      // PGlite's file-system errors are Emscripten ErrnoErrors: no message, an errno (54: not a directory).
      const what = err instanceof Error && err.message ? err.message : JSON.stringify(err) ?? String(err);
      const message = `Cannot open the embedded database in ${(workerData as { dir: string }).dir}: ${what}`;
      port.postMessage({ error: { message, stack: err instanceof Error ? err.stack : undefined } });
      port.close();
    },
  );
}

/**
 * Opens PGlite on dataDir and serves it on the Unix socket, in the calling thread: the
 * embedded thread's work, and the benchmark's way to reach the instance directly.
 */
export async function serveEmbedded(dataDir: string): Promise<EmbeddedInThread> {
  const dir = path.resolve(dataDir);
  if (await isHeld(dir)) throw inUse(dir);
  await mkdir(dir, { recursive: true });
  const sock = socketPath(dir);
  await rm(sock, { force: true }); // left by a process that did not stop cleanly
  const { PGlite } = await import('@electric-sql/pglite');
  // Default options, measured against the alternatives: `relaxedDurability` only stops awaiting
  // the file system's sync after each statement, which for a data directory on disk (NodeFS)
  // does nothing (PGlite writes through to the OS at once, with fsync off: a commit survives
  // this process crashing, not the machine), so it gains nothing to trade; `initialMemory`
  // and turning off statistics (track_counts, track_activities) did not change a query's cost.
  const db = await PGlite.create(path.join(dir, 'pgdata'));
  const session = new Session(db);
  const server = net.createServer((socket) => {
    const conn = session.connect({
      send: (data) => void socket.write(data),
      close: () => void socket.destroy(),
    });
    socket.on('data', (chunk: Buffer) => session.receive(conn, chunk));
    socket.on('close', () => session.drop(conn));
    socket.on('error', () => {}); // a client that went away: 'close' follows
  });
  server.maxConnections = 64;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(sock, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    await db.close();
    throw err;
  }
  return {
    socketDir: dir,
    db,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      session.closeAll();
      await closed;
      await session.idle();
      await db.close();
      await rm(sock, { force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------
// The bridge: many pg connections, one PGlite session.
//
// PGlite is one Postgres backend in single-user mode: every connection shares its session.
// A connection's messages run in batches, each up to the message after which its client
// waits for an answer (Sync, Query, Flush, CopyDone, CopyFail), in one call into PGlite,
// and the answer goes back in one write. The session belongs to one connection from the
// start of a batch until Postgres is idle again (ReadyForQuery with status I): no other
// connection's message can land between a Parse and its Bind, nor inside a transaction.
// (@electric-sql/pglite-socket 0.2.17 queues single messages from all connections and
// keeps them apart only inside transactions: electric-sql/pglite#1046, which kept this
// service's pool at one connection. It also costs a call into PGlite and a socket write
// per message; see bench/pgliteBreakdown.ts.)
// ---------------------------------------------------------------------------------------

const SSL_REQUEST_CODE = 80877103;
const GSSENC_REQUEST_CODE = 80877104;
const PROTOCOL_3 = 196608;
/** After these the client waits for an answer. */
const BATCH_ENDS = new Set([...'SQHcfX'].map((c) => c.charCodeAt(0)));
const TERMINATE = 'X'.charCodeAt(0);
const READY_FOR_QUERY = 'Z'.charCodeAt(0);
const IDLE = 'I'.charCodeAt(0);
const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);
const ROLLBACK = simpleQuery('ROLLBACK');

function simpleQuery(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`);
  const head = Buffer.from([0x51, 0, 0, 0, 0]);
  head.writeInt32BE(4 + text.length, 1);
  return Buffer.concat([head, text]);
}

interface Peer {
  send(data: Buffer): void;
  close(): void;
}

class Connection {
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes at the start of `pending` known to hold complete messages but no batch end. */
  private scanned = 0;
  private startedUp = false;
  closed = false;

  constructor(readonly peer: Peer) {}

  receive(chunk: Buffer): void {
    this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
  }

  get hasData(): boolean {
    return this.pending.length > 0;
  }

  /**
   * Length of the first complete batch in `pending` (0: none yet). Answers on the way what
   * the bridge answers itself: SSL and GSSAPI encryption requests (no); a cancel request
   * closes its connection (each statement runs to its end in PGlite).
   */
  batchLength(): number {
    if (!this.startedUp) {
      while (this.pending.length >= 8) {
        const length = this.pending.readInt32BE(0);
        const code = this.pending.readInt32BE(4);
        if (length === 8 && (code === SSL_REQUEST_CODE || code === GSSENC_REQUEST_CODE)) {
          this.peer.send(Buffer.from('N'));
          this.pending = this.pending.subarray(8);
          continue;
        }
        // A cancel request (code 80877102), or not a client of this protocol.
        if (code !== PROTOCOL_3 || length < 8) {
          this.fail();
          return 0;
        }
        return this.pending.length >= length ? length : 0;
      }
      return 0;
    }
    let end = this.scanned;
    while (end + 5 <= this.pending.length) {
      const type = this.pending[end]!;
      const length = this.pending.readInt32BE(end + 1);
      if (length < 4) {
        this.fail();
        return 0;
      }
      if (end + 1 + length > this.pending.length) break;
      end += 1 + length;
      if (BATCH_ENDS.has(type)) return end;
    }
    this.scanned = end;
    return 0;
  }

  /** Takes the batch that batchLength() found. */
  take(length: number): Buffer {
    const batch = this.pending.subarray(0, length);
    this.pending = this.pending.subarray(length);
    this.scanned = 0;
    this.startedUp = true;
    return batch;
  }

  fail(): void {
    this.pending = Buffer.alloc(0);
    this.peer.close();
  }
}

class Session {
  private owner: Connection | null = null;
  /** Connections with bytes not yet run, in arrival order. */
  private waiting: Connection[] = [];
  private connections = new Set<Connection>();
  private running: Promise<void> | null = null;
  /** An owner went away holding the session: end its extended query and its transaction. */
  private resetPending = false;

  constructor(private readonly db: PGlite) {}

  connect(peer: Peer): Connection {
    const conn = new Connection(peer);
    this.connections.add(conn);
    return conn;
  }

  receive(conn: Connection, chunk: Buffer): void {
    if (conn.closed) return;
    conn.receive(chunk);
    if (conn !== this.owner && !this.waiting.includes(conn)) this.waiting.push(conn);
    this.pump();
  }

  drop(conn: Connection): void {
    if (conn.closed) return;
    conn.closed = true;
    this.connections.delete(conn);
    this.waiting = this.waiting.filter((c) => c !== conn);
    if (this.owner === conn) {
      this.owner = null;
      this.resetPending = true;
      this.pump();
    }
  }

  closeAll(): void {
    for (const conn of [...this.connections]) {
      conn.peer.close();
      this.drop(conn);
    }
  }

  /** Resolves when nothing runs in PGlite on behalf of a connection. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private pump(): void {
    if (!this.running) this.running = this.runAll();
  }

  private async runAll(): Promise<void> {
    // Answers come in later turns: never inside the write that asked.
    await Promise.resolve();
    try {
      for (;;) {
        if (this.resetPending) {
          this.resetPending = false;
          await this.reset();
        }
        const next = this.next();
        // `running` is cleared in the same turn as this last look, so a batch arriving later starts a new run.
        if (!next) return;
        await this.run(next.conn, next.conn.take(next.length));
      }
    } finally {
      this.running = null;
    }
  }

  /** The owner's next batch; with no owner, the first waiting connection's that has one. */
  private next(): { conn: Connection; length: number } | undefined {
    if (this.owner) {
      const length = this.owner.closed ? 0 : this.owner.batchLength();
      return length ? { conn: this.owner, length } : undefined;
    }
    for (let i = 0; i < this.waiting.length; i++) {
      const conn = this.waiting[i]!;
      const length = conn.batchLength();
      if (length) {
        this.waiting.splice(i, 1);
        return { conn, length };
      }
      if (!conn.hasData || conn.closed) this.waiting.splice(i--, 1);
    }
    return undefined;
  }

  private async run(conn: Connection, batch: Buffer): Promise<void> {
    // Terminate (always the 5 bytes X 0 0 0 4, and last: it ends a batch) is the bridge's to handle.
    const terminate = batch.length >= 5 && batch[batch.length - 5] === TERMINATE && batch.readInt32BE(batch.length - 4) === 4;
    if (terminate) batch = batch.subarray(0, batch.length - 5);
    let answer: Buffer | undefined;
    if (batch.length) {
      const out: Buffer[] = [];
      try {
        await this.db.runExclusive(() =>
          this.db.execProtocolRawStream(batch, { onRawData: (data) => void out.push(Buffer.from(data)) }),
        );
      } catch {
        // PGlite failed outside Postgres's own error handling: this connection's state is unknown.
        this.owner = conn;
        conn.fail();
        this.drop(conn);
        return;
      }
      answer = out.length === 1 ? out[0]! : Buffer.concat(out);
      if (answer.length && !conn.closed) conn.peer.send(answer);
    }
    if (terminate) {
      conn.peer.close();
      this.drop(conn);
      return;
    }
    // Idle again: ReadyForQuery ('Z', 6 bytes) last, with status I (no transaction open).
    const n = answer?.length ?? 0;
    const idle = n >= 6 && answer![n - 6] === READY_FOR_QUERY && answer![n - 1] === IDLE;
    if (conn.closed) {
      if (!idle) this.resetPending = true;
      return;
    }
    this.owner = idle ? null : conn;
    if (!idle) this.waiting = this.waiting.filter((c) => c !== conn);
    else if (conn.hasData && !this.waiting.includes(conn)) this.waiting.push(conn);
  }

  private async reset(): Promise<void> {
    if (this.db.closed) return;
    const discard = { onRawData: () => {} };
    try {
      await this.db.runExclusive(async () => {
        await this.db.execProtocolRawStream(SYNC, discard);
        if (this.db.isInTransaction()) await this.db.execProtocolRawStream(ROLLBACK, discard);
      });
    } catch {
      // Closed meanwhile: nothing left to reset.
    }
  }
}
