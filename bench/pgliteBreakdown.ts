/**
 * Where the embedded store's cost goes: the service's list query (GET /v1/pets?limit=20,
 * i.e. LIST with limit 21 and no cursor) measured layer by layer, on the same data, in
 * interleaved rounds, so that the difference between two layers is the cost of the one
 * that separates them:
 *
 *   (a) PGlite in this thread: the raw protocol bytes of one query in one call (the WASM
 *       floor), the same bytes one message per call (what pglite-socket does), and PGlite's
 *       own db.query (six protocol calls and a JS result parser per query);
 *   (b) one pg connection through a bridge: @electric-sql/pglite-socket's server in this
 *       thread (what the service used before), the batching bridge of src/db/embedded.ts in
 *       this thread, and the same in PGlite's own thread (what the service uses now);
 *   (c) pg.Pool with 10 callers: before (max 1, pglite-socket), the batching bridge with
 *       the service's pool of 10 in this thread, and in its own thread with 1 and with 10;
 *   (d) Postgres, one pg connection; (e) Postgres, the pool of 10, 1 and 10 callers;
 *   (f) the pools of (c) and (e) with 100 µs of JS per query in the callers' thread, as the
 *       service has HTTP work: where PGlite's thread pays off, or its sharing of one hurts.
 *
 * All of PGlite runs in this process, so this process's CPU per query (all threads) is the
 * whole cost of a PGlite query; for Postgres it is the driver's share, and the backends' CPU
 * is read from /proc when the server runs on this machine.
 */
import { readFileSync } from 'node:fs';
import { cp, mkdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { EventLoopUtilization } from 'node:perf_hooks';
import type { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import type pg from 'pg';
import { openDatabase, type Database } from '../src/db/database.js';
import {
  EMBEDDED_SOCKET_PORT,
  embeddedConnection,
  serveEmbedded,
  startEmbedded,
  type EmbeddedInThread,
  type EmbeddedThread,
} from '../src/db/embedded.js';
import { createPool } from '../src/db/pgPool.js';
import { LIST } from '../src/pets/sql.js';
import { createDatabase, dropDatabase } from '../test/helpers/databases.js';
import { LOCAL_POSTGRES_URL, postgresAnswers } from '../test/helpers/probes.js';
import { scratchDir } from '../test/helpers/scratchDir.js';
import { seedPets } from './data.js';
import { median, rotate } from './stats.js';
import { cstring, int16, int32, message } from '../test/helpers/pgWire.js';

/** GET /v1/pets?limit=20: no cursor, one extra row to tell whether a next page exists. */
const LIST_PARAMS = [0, 21] as const;
const THROUGHPUT_CALLERS = 10;
/**
 * JS work per query in the callers' thread for layer (f): about what the service spends per
 * listPets request besides its query (its CPU per request on Postgres, less the driver).
 */
const CALLER_WORK_MICROS = 100;
/** DB_POOL_MAX's default: the service's pool, on either backend. */
const POOL_MAX = 10;

export interface PgliteBreakdownOptions {
  pets: number;
  /** Seconds per layer per round. */
  seconds: number;
  rounds: number;
  log(msg: string): void;
  /** Postgres server for layers (d) and (e); default BENCH_DATABASE_URL, DATABASE_URL or the local one. */
  adminUrl?: string;
}

/** One layer at one concurrency: medians over the rounds, with the rounds' range. */
export interface PgliteLayer {
  id: string;
  /** (a) … (e), as in the module's comment. */
  layer: 'a' | 'b' | 'c' | 'd' | 'e' | 'f';
  label: string;
  backend: 'pglite' | 'postgres';
  /** pg connections the callers share (0: no connection, in-process). */
  connections: number;
  /** Concurrent callers, each with one query in flight. */
  callers: number;
  queriesPerSecond: number;
  queriesPerSecondMin: number;
  queriesPerSecondMax: number;
  /** Median time from call to result, as a caller sees it. */
  microsPerQuery: number;
  microsPerQueryMin: number;
  microsPerQueryMax: number;
  p99MicrosPerQuery: number;
  /** CPU of this process, all threads (user + system), per query: all of PGlite's cost; only the driver's for Postgres. */
  cpuMicrosPerQuery: number;
  cpuMicrosPerQueryMin: number;
  cpuMicrosPerQueryMax: number;
  /**
   * The database side's time per query: the Postgres backends' CPU (when they run on this
   * machine), or the PGlite thread's busy time (part of cpuMicrosPerQuery); null otherwise.
   */
  dbMicrosPerQuery: number | null;
  queries: number;
  errors: number;
}

export interface PgliteBreakdown {
  pets: number;
  seconds: number;
  rounds: number;
  /** Why layers (d) and (e) are missing, if they are. */
  postgresSkipped: string | null;
  versions: { pglite: string; pgliteSocket: string; postgres: string | null };
  layers: PgliteLayer[];
  /** Paired per-round ratios of queries per second (median and range over the rounds). */
  ratios: Array<{ what: string; ratio: number; ratioMin: number; ratioMax: number }>;
}

interface Arm {
  id: string;
  layer: PgliteLayer['layer'];
  label: string;
  backend: PgliteLayer['backend'];
  connections: number;
  callers: number;
  run(): Promise<unknown>;
  /** Measured only with `callers` callers, not also with one. */
  onlyAtCallers?: boolean;
  /** Backend pids whose CPU counts for this arm (Postgres on this machine). */
  serverPids?: () => number[];
  /** The PGlite thread's busy time (its event-loop utilization, since `previous`). */
  dbBusy?: (previous?: EventLoopUtilization) => EventLoopUtilization;
}

interface Sample {
  queriesPerSecond: number;
  microsPerQuery: number;
  p99MicrosPerQuery: number;
  cpuMicrosPerQuery: number;
  dbMicrosPerQuery: number | null;
  queries: number;
  errors: number;
}

const CLOCK_TICK_MICROS = 10_000; // USER_HZ = 100 on Linux

/** utime + stime of a process, in µs; null when it cannot be read (another machine, container). */
function processCpuMicros(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MICROS;
  } catch {
    return null;
  }
}

function sumCpu(pids: number[]): number | null {
  let total = 0;
  for (const pid of pids) {
    const t = processCpuMicros(pid);
    if (t === null) return null;
    total += t;
  }
  return total;
}

/** Keeps this thread busy for `micros`: the stand-in for a request's HTTP work. */
function spin(micros: number): void {
  const until = performance.now() + micros / 1000;
  while (performance.now() < until);
}

/** `callers` loops, each awaiting one query at a time, for `seconds`. */
async function drive(arm: Arm, seconds: number): Promise<Sample> {
  const latencies: number[] = [];
  let errors = 0;
  const pids = arm.serverPids?.() ?? [];
  const server0 = pids.length ? sumCpu(pids) : null;
  const elu0 = arm.dbBusy?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: arm.callers }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        try {
          await arm.run();
        } catch {
          errors++;
        }
        latencies.push(performance.now() - s);
      }
    }),
  );
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const server1 = pids.length ? sumCpu(pids) : null;
  const threadMicros = elu0 ? arm.dbBusy!(elu0).active * 1000 : null;
  latencies.sort((x, y) => x - y);
  const queries = latencies.length;
  return {
    queriesPerSecond: (queries * 1000) / elapsedMs,
    microsPerQuery: (latencies[queries >> 1] ?? NaN) * 1000,
    p99MicrosPerQuery: (latencies[Math.floor(queries * 0.99)] ?? NaN) * 1000,
    cpuMicrosPerQuery: (cpu.user + cpu.system) / queries,
    dbMicrosPerQuery:
      threadMicros !== null ? threadMicros / queries : server0 !== null && server1 !== null ? (server1 - server0) / queries : null,
    queries,
    errors,
  };
}

// --- The raw protocol bytes of one LIST query, as pg sends them (unnamed statement, text formats). ---

function listQueryMessages(): Buffer[] {
  const params = LIST_PARAMS.map((v) => Buffer.from(String(v)));
  return [
    message('P', cstring(''), cstring(LIST), int16(0)),
    message('B', cstring(''), cstring(''), int16(0), int16(params.length), ...params.flatMap((p) => [int32(p.length), p]), int16(0)),
    message('D', Buffer.from('P'), cstring('')),
    message('E', cstring(''), int32(0)),
    message('S'),
  ];
}

/** The raw arm must do the real work: 21 DataRows, then ReadyForQuery. */
async function checkRawAnswer(db: PGlite, batch: Uint8Array): Promise<void> {
  const chunks: Buffer[] = [];
  await db.runExclusive(() => db.execProtocolRawStream(batch, { syncToFs: false, onRawData: (d) => chunks.push(Buffer.from(d)) }));
  const out = Buffer.concat(chunks);
  const types: string[] = [];
  for (let i = 0; i < out.length; i += 1 + out.readInt32BE(i + 1)) types.push(String.fromCharCode(out[i]!));
  const rows = types.filter((t) => t === 'D').length;
  if (rows !== LIST_PARAMS[1] || types.at(-1) !== 'Z') throw new Error(`raw LIST answered ${types.join('')}, not ${LIST_PARAMS[1]} rows`);
}

function packageVersion(name: string): string {
  const require = createRequire(import.meta.url);
  try {
    return (require(`${name}/package.json`) as { version: string }).version;
  } catch {
    const main = require.resolve(name);
    const dir = main.slice(0, main.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}/`.length);
    return (JSON.parse(readFileSync(`${dir}package.json`, 'utf8')) as { version: string }).version;
  }
}

interface Setup {
  arms: Arm[];
  close(): Promise<void>;
}

/** The embedded store, seeded, served in this thread and in a thread of its own; arms (a), (b), (c). */
async function embeddedArms(pets: number, servicePoolMax: number): Promise<Setup> {
  const dir = await scratchDir('as-pglite-breakdown-');
  const here = path.join(dir, 'here');
  const thread = path.join(dir, 'thread');
  const stockDir = path.join(dir, 'stock');
  // Migrated and seeded as a server would do it, then copied: the same data for both instances.
  const seeded: Database = await openDatabase({ databaseUrl: undefined, dataDir: here, poolMax: 1, onIdleError: () => {} });
  await seedPets(seeded.pool, pets);
  await seeded.close();
  await cp(path.join(here, 'pgdata'), path.join(thread, 'pgdata'), { recursive: true });
  await mkdir(stockDir);
  const closers: Array<() => Promise<unknown>> = [() => rm(dir, { recursive: true, force: true })];
  const close = async () => {
    for (const fn of closers.reverse()) await fn();
  };
  try {
    // In this thread: the instance itself, the batching bridge, and the server this service used
    // before, @electric-sql/pglite-socket's, on the same PGlite and a socket of its own (arms run
    // one at a time, so their sessions never mix).
    const inThread: EmbeddedInThread = await serveEmbedded(here);
    closers.push(() => inThread.close());
    const db = inThread.db;
    const stock = new PGLiteSocketServer({ db, path: path.join(stockDir, `.s.PGSQL.${EMBEDDED_SOCKET_PORT}`), maxConnections: 64 });
    await stock.start();
    closers.push(() => stock.stop());
    // What the service runs now: the store in a thread of its own.
    const own: EmbeddedThread = await startEmbedded(thread);
    closers.push(() => own.close());

    const pools: pg.Pool[] = [];
    closers.push(() => Promise.all(pools.map((p) => p.end())));
    const pool = (max: number, where: string) => {
      const p = createPool({ max, connection: embeddedConnection(where), onIdleError: () => {} }).pool;
      pools.push(p);
      return p;
    };
    const clients = await Promise.all([pool(1, stockDir).connect(), pool(1, here).connect(), pool(1, thread).connect()]);
    closers.push(async () => clients.forEach((c) => c.release()));
    const [stockClient, bridgeClient, threadClient] = clients;
    const messages = listQueryMessages();
    const batch = new Uint8Array(Buffer.concat(messages));
    const parts = messages.map((m) => new Uint8Array(m));
    // Streamed, as the bridges read it. (Not execProtocolRaw: PGlite keeps the last stream's
    // callback and would write this output to the last client a bridge served.)
    const sink = (_data: Uint8Array) => {};
    await checkRawAnswer(db, batch);
    const list = (q: { query: pg.Pool['query'] }) => () => q.query(LIST, [...LIST_PARAMS]);
    const threadBusy = (previous?: EventLoopUtilization) => own.eventLoopUtilization(previous);
    const socketVersion = packageVersion('@electric-sql/pglite-socket');
    const arms: Arm[] = [
      {
        id: 'wasm',
        layer: 'a',
        label: 'PGlite in this thread, protocol bytes in one call (WASM floor)',
        backend: 'pglite',
        connections: 0,
        callers: 1,
        run: () => db.runExclusive(() => db.execProtocolRawStream(batch, { syncToFs: false, onRawData: sink })),
      },
      {
        id: 'wasmPerMessage',
        layer: 'a',
        label: 'PGlite in this thread, one call per protocol message',
        backend: 'pglite',
        connections: 0,
        callers: 1,
        run: async () => {
          for (const part of parts) await db.runExclusive(() => db.execProtocolRawStream(part, { onRawData: sink }));
        },
      },
      {
        id: 'pgliteQuery',
        layer: 'a',
        label: "PGlite in this thread, db.query (PGlite's own API)",
        backend: 'pglite',
        connections: 0,
        callers: 1,
        run: () => db.query(LIST, [...LIST_PARAMS]),
      },
      {
        id: 'stockClient',
        layer: 'b',
        label: `pg → pglite-socket ${socketVersion} server, this thread (before)`,
        backend: 'pglite',
        connections: 1,
        callers: 1,
        run: list(stockClient!),
      },
      {
        id: 'bridgeClient',
        layer: 'b',
        label: 'pg → batching bridge, this thread',
        backend: 'pglite',
        connections: 1,
        callers: 1,
        run: list(bridgeClient!),
      },
      {
        id: 'threadClient',
        layer: 'b',
        label: 'pg → batching bridge, PGlite thread (now)',
        backend: 'pglite',
        connections: 1,
        callers: 1,
        run: list(threadClient!),
        dbBusy: threadBusy,
      },
      {
        id: 'stockPool',
        layer: 'c',
        label: `pg.Pool max 1 → pglite-socket ${socketVersion}, this thread (before)`,
        backend: 'pglite',
        connections: 1,
        callers: THROUGHPUT_CALLERS,
        onlyAtCallers: true,
        run: list(pool(1, stockDir)),
      },
      {
        id: 'bridgePool',
        layer: 'c',
        label: `pg.Pool max ${servicePoolMax} → batching bridge, this thread`,
        backend: 'pglite',
        connections: servicePoolMax,
        callers: THROUGHPUT_CALLERS,
        onlyAtCallers: true,
        run: list(pool(servicePoolMax, here)),
      },
      {
        id: 'threadPool1',
        layer: 'c',
        label: 'pg.Pool max 1 → batching bridge, PGlite thread',
        backend: 'pglite',
        connections: 1,
        callers: THROUGHPUT_CALLERS,
        onlyAtCallers: true,
        run: list(pool(1, thread)),
        dbBusy: threadBusy,
      },
      {
        id: 'servicePool',
        layer: 'c',
        label: `pg.Pool max ${servicePoolMax} → batching bridge, PGlite thread (now)`,
        backend: 'pglite',
        connections: servicePoolMax,
        callers: THROUGHPUT_CALLERS,
        run: list(pool(servicePoolMax, thread)),
        dbBusy: threadBusy,
      },
    ];
    return { arms, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** A new Postgres database, migrated and seeded; arms (d) and (e). */
async function postgresArms(adminUrl: string, pets: number): Promise<Setup & { version: string }> {
  const name = `as_pglite_breakdown_${process.pid}`;
  const url = await createDatabase(adminUrl, name);
  const db = await openDatabase({ databaseUrl: url, dataDir: '', poolMax: POOL_MAX, onIdleError: () => {} });
  await seedPets(db.pool, pets);
  const pool = db.pool;
  const version = (await pool.query<{ v: string }>('SHOW server_version')).rows[0]!.v;
  // Open all ten connections now, so no arm pays for connecting.
  const warm = await Promise.all(Array.from({ length: POOL_MAX }, () => pool.connect()));
  const pids = await Promise.all(warm.map(async (c) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid));
  for (const c of warm.slice(1)) c.release();
  const client = warm[0]!;
  const local = pids.every((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres');
    } catch {
      return false;
    }
  });
  const arms: Arm[] = [
    {
      id: 'postgresClient',
      layer: 'd',
      label: 'Postgres, one pg connection',
      backend: 'postgres',
      connections: 1,
      callers: 1,
      run: () => client.query(LIST, [...LIST_PARAMS]),
      ...(local && { serverPids: () => pids.slice(0, 1) }),
    },
    {
      id: 'postgresPool',
      layer: 'e',
      label: `Postgres, pool of ${POOL_MAX}`,
      backend: 'postgres',
      connections: POOL_MAX,
      callers: THROUGHPUT_CALLERS,
      // The pool's other nine connections (the first is held by the one-connection arm).
      run: () => pool.query(LIST, [...LIST_PARAMS]),
      ...(local && { serverPids: () => pids.slice(1) }),
    },
  ];
  return {
    arms,
    version,
    async close() {
      client.release();
      await db.close();
      await dropDatabase(adminUrl, name);
    },
  };
}

/** Same arm at one caller (latency) as well as at its own concurrency, where that differs. */
function withLatencyArms(arms: Arm[]): Arm[] {
  return arms.flatMap((arm) =>
    arm.callers === 1 || arm.onlyAtCallers ? [{ ...arm, id: arm.callers === 1 ? arm.id : `${arm.id}@${arm.callers}` }] : [{ ...arm, id: `${arm.id}@1`, callers: 1 }, { ...arm, id: `${arm.id}@${arm.callers}` }],
  );
}

export async function pgliteBreakdown(opts: PgliteBreakdownOptions): Promise<PgliteBreakdown> {
  const { pets, seconds, rounds, log } = opts;
  const adminUrl = opts.adminUrl ?? process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;
  log(`PGlite breakdown: ${pets} pets, ${rounds} rounds of ${seconds} s per layer`);
  const setups: Setup[] = [];
  try {
    const embedded = await embeddedArms(pets, POOL_MAX);
    setups.push(embedded);
    let postgresSkipped: string | null = null;
    let postgresVersion: string | null = null;
    let arms = embedded.arms;
    if (await postgresAnswers(adminUrl)) {
      const postgres = await postgresArms(adminUrl, pets);
      setups.push(postgres);
      postgresVersion = postgres.version;
      arms = [...arms, ...postgres.arms];
    } else {
      postgresSkipped = `Postgres at ${adminUrl.replace(/\/\/[^@/]*@/, '//')} did not answer`;
      log(`  ${postgresSkipped}: layers (d) and (e) skipped`);
    }
    arms = withLatencyArms(arms);
    // (f): the same pools when the callers' thread has other work too, as the service's has HTTP.
    const withWork = ['stockPool', 'bridgePool', 'servicePool', 'postgresPool'].map((id) => arms.find((a) => a.id === `${id}@${THROUGHPUT_CALLERS}`));
    arms = [
      ...arms,
      ...withWork
        .filter((a): a is Arm => !!a)
        .map((a) => ({
          ...a,
          id: `${a.id}+work`,
          layer: 'f' as const,
          label: `${a.label}, + ${CALLER_WORK_MICROS} µs of JS per query in the callers' thread`,
          run: () => {
            spin(CALLER_WORK_MICROS);
            return a.run();
          },
        })),
    ];

    // Warm-up: JIT, plan caches, the pools' connections.
    for (const arm of arms) await drive(arm, Math.min(0.5, seconds));
    const samples = new Map<string, Sample[]>(arms.map((a) => [a.id, []]));
    for (let r = 0; r < rounds; r++) {
      for (const arm of rotate(arms, r)) {
        const s = await drive(arm, seconds);
        samples.get(arm.id)!.push(s);
        log(
          `  round ${r + 1}/${rounds} ${`${arm.layer}: ${arm.id}`.padEnd(28)} ${s.queriesPerSecond.toFixed(0).padStart(6)} q/s  ${s.microsPerQuery.toFixed(0).padStart(5)} µs/q  cpu ${s.cpuMicrosPerQuery.toFixed(0).padStart(4)} µs/q${s.dbMicrosPerQuery !== null ? `  db side ${s.dbMicrosPerQuery.toFixed(0)} µs/q` : ''}${s.errors ? `  ${s.errors} errors` : ''}`,
        );
      }
    }

    const layers: PgliteLayer[] = arms.map((arm) => {
      const ss = samples.get(arm.id)!;
      const of = (f: (s: Sample) => number) => ss.map(f);
      const dbSide = ss.map((s) => s.dbMicrosPerQuery).filter((v): v is number => v !== null);
      return {
        id: arm.id,
        layer: arm.layer,
        label: arm.label,
        backend: arm.backend,
        connections: arm.connections,
        callers: arm.callers,
        queriesPerSecond: median(of((s) => s.queriesPerSecond)),
        queriesPerSecondMin: Math.min(...of((s) => s.queriesPerSecond)),
        queriesPerSecondMax: Math.max(...of((s) => s.queriesPerSecond)),
        microsPerQuery: median(of((s) => s.microsPerQuery)),
        microsPerQueryMin: Math.min(...of((s) => s.microsPerQuery)),
        microsPerQueryMax: Math.max(...of((s) => s.microsPerQuery)),
        p99MicrosPerQuery: median(of((s) => s.p99MicrosPerQuery)),
        cpuMicrosPerQuery: median(of((s) => s.cpuMicrosPerQuery)),
        cpuMicrosPerQueryMin: Math.min(...of((s) => s.cpuMicrosPerQuery)),
        cpuMicrosPerQueryMax: Math.max(...of((s) => s.cpuMicrosPerQuery)),
        dbMicrosPerQuery: dbSide.length === ss.length ? median(dbSide) : null,
        queries: ss.reduce((n, s) => n + s.queries, 0),
        errors: ss.reduce((n, s) => n + s.errors, 0),
      };
    });

    const paired = (what: string, a: string, b: string) => {
      const sa = samples.get(a);
      const sb = samples.get(b);
      if (!sa || !sb) return [];
      const rs = sa.map((s, i) => s.queriesPerSecond / sb[i]!.queriesPerSecond);
      return [{ what, ratio: median(rs), ratioMin: Math.min(...rs), ratioMax: Math.max(...rs) }];
    };
    const c = THROUGHPUT_CALLERS;
    const ratios = [
      ...paired(`PGlite now vs Postgres, pools of ${POOL_MAX}, ${c} callers`, `servicePool@${c}`, `postgresPool@${c}`),
      ...paired(`PGlite before vs Postgres, ${c} callers`, `stockPool@${c}`, `postgresPool@${c}`),
      ...paired(`PGlite now vs Postgres, ${c} callers with ${CALLER_WORK_MICROS} µs of JS each`, `servicePool@${c}+work`, `postgresPool@${c}+work`),
      ...paired(`PGlite before vs Postgres, ${c} callers with ${CALLER_WORK_MICROS} µs of JS each`, `stockPool@${c}+work`, `postgresPool@${c}+work`),
      ...paired(`PGlite now vs before, ${c} callers with ${CALLER_WORK_MICROS} µs of JS each`, `servicePool@${c}+work`, `stockPool@${c}+work`),
      ...paired('Batching bridge vs pglite-socket, one connection, this thread', 'bridgeClient', 'stockClient'),
    ];

    return {
      pets,
      seconds,
      rounds,
      postgresSkipped,
      versions: { pglite: packageVersion('@electric-sql/pglite'), pgliteSocket: packageVersion('@electric-sql/pglite-socket'), postgres: postgresVersion },
      layers,
      ratios,
    };
  } finally {
    for (const s of setups.reverse()) await s.close().catch((err: Error) => log(`pglite breakdown cleanup: ${err.message}`));
  }
}

// --- Markdown ---

const n0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');
const pct = (x: number) => (Number.isFinite(x) ? `${Math.round(x * 100)}%` : 'n/a');
const x2 = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a');
const range = (median: number, min: number, max: number) => `${n0(median)} (${n0(min)}–${n0(max)})`;

export function renderPgliteBreakdown(result: PgliteBreakdown): string {
  const byId = new Map(result.layers.map((l) => [l.id, l]));
  const c = THROUGHPUT_CALLERS;
  const rows = result.layers
    .map((l) => {
      const db = l.dbMicrosPerQuery === null ? (l.backend === 'pglite' ? 'in the CPU column' : 'n/a') : n0(l.dbMicrosPerQuery);
      return `| (${l.layer}) ${l.label} | ${l.callers} | ${range(l.queriesPerSecond, l.queriesPerSecondMin, l.queriesPerSecondMax)} | ${range(l.microsPerQuery, l.microsPerQueryMin, l.microsPerQueryMax)} | ${n0(l.p99MicrosPerQuery)} | ${range(l.cpuMicrosPerQuery, l.cpuMicrosPerQueryMin, l.cpuMicrosPerQueryMax)} | ${db} |${l.errors ? ` ${l.errors} errors` : ''}`;
    })
    .join('\n');
  const ratio = (prefix: string) => {
    const r = result.ratios.find((x) => x.what.startsWith(prefix));
    return r ? `${x2(r.ratio)} (${x2(r.ratioMin)}–${x2(r.ratioMax)})` : 'n/a';
  };

  const wasm = byId.get('wasm');
  const perMessage = byId.get('wasmPerMessage');
  const query = byId.get('pgliteQuery');
  const stock = byId.get('stockClient');
  const bridge = byId.get('bridgeClient');
  const threadOne = byId.get('threadClient');
  const stockPool = byId.get(`stockPool@${c}`);
  const bridgePool = byId.get(`bridgePool@${c}`);
  const threadPool1 = byId.get(`threadPool1@${c}`);
  const service = byId.get(`servicePool@${c}`);
  const pgClient = byId.get('postgresClient');
  const pgPool = byId.get(`postgresPool@${c}`);
  const stockWork = byId.get(`stockPool@${c}+work`);
  const serviceWork = byId.get(`servicePool@${c}+work`);
  const pgWork = byId.get(`postgresPool@${c}+work`);

  const f = (l: PgliteLayer | undefined, pick: (l: PgliteLayer) => number | null) => n0(l ? (pick(l) ?? NaN) : NaN);
  const says: string[] = [];
  if (wasm) {
    says.push(
      `The floor is Postgres itself in WASM: ${n0(wasm.cpuMicrosPerQuery)} µs of CPU per query with the protocol bytes fed straight in` +
        (pgClient?.dbMicrosPerQuery ? ` (a native Postgres backend spends ${n0(pgClient.dbMicrosPerQuery)} µs)` : '') +
        `, so one PGlite thread tops out near ${n0(1e6 / wasm.cpuMicrosPerQuery)} queries/s` +
        (query ? `; PGlite's own \`db.query\` is no shortcut at ${n0(query.cpuMicrosPerQuery)} µs (six protocol calls and a JS row parser per query).` : '.'),
    );
  }
  if (wasm && perMessage && stock && bridge) {
    says.push(
      `pglite-socket ${result.versions.pgliteSocket} made a query cost ${n0(stock.cpuMicrosPerQuery)} µs of this process's CPU, ${pct(1 - wasm.cpuMicrosPerQuery / stock.cpuMicrosPerQuery)} of it outside WASM, by running and answering each protocol message on its own (the separate calls alone: +${n0(perMessage.cpuMicrosPerQuery - wasm.cpuMicrosPerQuery)} µs); the batching bridge, one call and one write per Sync, costs ${n0(bridge.cpuMicrosPerQuery)} µs.`,
    );
  }
  if (stockPool && bridgePool && service && threadPool1) {
    says.push(
      `${c} callers got ${n0(stockPool.queriesPerSecond)} queries/s before (one connection to pglite-socket), ${n0(bridgePool.queriesPerSecond)} with the batching bridge and a pool of ${bridgePool.connections} in the same thread, and ${n0(service.queriesPerSecond)} with PGlite in its own thread (${n0(threadPool1.queriesPerSecond)} there with one connection), where its thread is busy ${f(service, (l) => l.dbMicrosPerQuery)} µs per query and the callers' thread pays ${n0(service.cpuMicrosPerQuery - (service.dbMicrosPerQuery ?? NaN))} µs (${f(pgPool, (l) => l.cpuMicrosPerQuery)} µs on Postgres).`,
    );
  }
  if (stockWork && serviceWork) {
    says.push(
      `With ${CALLER_WORK_MICROS} µs of JS per query in the callers' thread, standing for the service's HTTP work, PGlite goes from ${n0(stockWork.queriesPerSecond)} to ${n0(serviceWork.queriesPerSecond)} queries/s (${ratio('PGlite now vs before')})` +
        (pgWork ? `, against ${n0(pgWork.queriesPerSecond)} on Postgres (${ratio(`PGlite now vs Postgres, ${c} callers with`)} of it now, ${ratio(`PGlite before vs Postgres, ${c} callers with`)} before)` : '') +
        `: in a thread of its own PGlite works beside the HTTP work, as a Postgres backend does, instead of taking turns with it.`,
    );
  }
  if (threadOne && stock) {
    says.push(`The price is latency when idle: a lone query waits ${n0(threadOne.microsPerQuery)} µs instead of ${n0(stock.microsPerQuery)} µs before, two thread wake-ups.`);
  }
  if (service && pgPool) {
    says.push(
      `What remains is PGlite's single session: one statement at a time at ${f(service, (l) => l.dbMicrosPerQuery)} µs of its thread per query (a Postgres backend: ${f(pgPool, (l) => l.dbMicrosPerQuery)} µs), a ceiling near ${n0(1e6 / (service.dbMicrosPerQuery ?? NaN))} queries/s where Postgres spreads ${n0(pgPool.queriesPerSecond)} over its backends and cores; and where every core is busy (the bench's two also run the load generator) those microseconds compete with the HTTP work again, so the service keeps less of this gain than layer (f) shows.`,
    );
  }

  return `## PGlite: where the embedded store's time goes

The service's list query (\`GET /v1/pets?limit=20\`: LIST, limit 21, no cursor) on ${n0(result.pets)} pets, layer by layer in one process, ${result.rounds} interleaved rounds of ${result.seconds} s per layer; median (range over rounds). PGlite ${result.versions.pglite}, pglite-socket ${result.versions.pgliteSocket}${result.versions.postgres ? `, Postgres ${result.versions.postgres}` : ''}. *CPU* is this process's, all threads (user + system), per query: all of PGlite's cost, only the driver's for Postgres. *DB side* is a Postgres backend's CPU, or the PGlite thread's busy time (included in *CPU*). Layer (f) adds ${CALLER_WORK_MICROS} µs of JS per query to the callers' thread, as the service's HTTP work does.${result.postgresSkipped ? ` ${result.postgresSkipped}: no Postgres layers.` : ''}

| layer | callers | queries/s | µs per query (p50) | p99 µs | CPU µs per query | DB side µs per query |
|---|---:|---:|---:|---:|---:|---:|
${rows}

${result.ratios.map((r) => `- ${r.what}: ${x2(r.ratio)} (${x2(r.ratioMin)}–${x2(r.ratioMax)})`).join('\n')}

${says.join(' ')}
`;
}
