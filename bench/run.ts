/**
 * npm run bench [-- --quick]: measures the service against its own ceiling on this
 * machine, in one run, and writes BENCHMARKS.md. See BENCHMARKS.md for the method.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { encodeCursor } from '../src/pagination/cursor.js';
import { projectRoot } from '../src/paths.js';
import { LIST, LIST_BY_STATUS } from '../src/pets/sql.js';
import { createEmbeddedDatabase, createPostgresDatabase, seedOrders } from './data.js';
import { decompose, profiledCosts } from './decomposition.js';
import { compareSerializers } from './serializers.js';
import { measure, rounds as runRounds, type Arm, type Measurement } from './load.js';
import { pgliteBreakdown } from './pgliteBreakdown.js';
import { renderReport, type Report } from './report.js';
import { median, rotate } from './stats.js';
import { startTarget, type Target } from './targets.js';
import { LOCAL_POSTGRES_URL, LOCAL_REDIS_URL, redisAnswers } from '../test/helpers/probes.js';
import { runScript } from '../test/helpers/processes.js';
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';

const USAGE = `Usage: npm run bench [-- --quick]

Measures the service against its own ceiling on this machine and rewrites BENCHMARKS.md;
exits 1 when a target is missed. About 20 minutes (--quick: about 3, two rounds of 1 s).
Needs Postgres (BENCH_DATABASE_URL, else DATABASE_URL, else 127.0.0.1:5432); uses Redis
(BENCH_REDIS_URL, else REDIS_URL, else 127.0.0.1:6379) when it answers. Every database,
server and folder it makes is removed at the end, on failure and on Ctrl-C.`;

const { values: args } = parseCommandLine(USAGE, { options: { quick: { type: 'boolean' } } });
const quick = args.quick === true;
const settings = quick
  ? { seconds: 1, rounds: 2, warmupSeconds: 0.5, latencySeconds: 1, latencyRounds: 1, connections: 10, concurrencies: [10, 32] }
  : { seconds: 5, rounds: 5, warmupSeconds: 2, latencySeconds: 5, latencyRounds: 3, connections: 10, concurrencies: [10, 32] };
const SMALL_PETS = 10_000;
const SCALE_PETS = 1_000_000;
/** Pets for placeOrder to take, one each: room for every round at the rates seen here. */
const ORDERABLE_PETS = 300_000;
const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;
const redisUrl = process.env.BENCH_REDIS_URL ?? process.env.REDIS_URL ?? LOCAL_REDIS_URL;
const runId = `${process.pid}`;

const log = (msg: string) => process.stderr.write(`${msg}\n`);

// The service as shipped (default log level, pool and serialization), with limits that
// are counted on every request but never reached.
const serviceEnv = {
  RATE_LIMIT_ANONYMOUS: '100000000/1000000000',
  REDIS_PREFIX: `bench-${runId}:`,
};

const cleanups: Array<() => Promise<unknown>> = [];
async function cleanup() {
  for (const fn of cleanups.reverse()) await fn().catch((err) => log(`cleanup: ${err.message}`));
}

/** The shared runner (bench/load.ts) with this run's warm-up and connections, logging each measurement. */
function rounds(arms: Arm[], count: number, opts: { seconds: number; rate?: number; connections?: number; pairs?: boolean }) {
  return runRounds(arms, count, {
    ...opts,
    connections: opts.connections ?? settings.connections,
    warmupSeconds: settings.warmupSeconds,
    onMeasured: (r, arm, m) =>
      log(`  round ${r + 1}/${count} ${arm.name.padEnd(34)} ${m.rps.toFixed(0).padStart(6)} req/s  p50 ${m.p50.toFixed(2)} ms  p99 ${m.p99.toFixed(2)} ms${m.invalid ? `  INVALID: ${m.invalid}` : ''}`),
  });
}

async function main(): Promise<Report> {
  const started = Date.now();
  log(`Animal Store benchmark (${quick ? 'quick' : 'full'}): ${settings.rounds} rounds of ${settings.seconds} s per arm`);

  log('Preparing databases…');
  const pgDb = await createPostgresDatabase(adminUrl, `as_bench_${runId}`, SMALL_PETS);
  cleanups.push(() => pgDb.drop());
  const ordersDb = await createPostgresDatabase(adminUrl, `as_bench_orders_${runId}`, 0);
  cleanups.push(() => ordersDb.drop());
  const orderable = await seedOrders(ordersDb, { available: ORDERABLE_PETS, placed: 1_000 });
  const embedded = await createEmbeddedDatabase(SMALL_PETS);
  cleanups.push(() => embedded.drop());
  const withRedis = await redisAnswers(redisUrl);
  if (!withRedis) log(`Redis at ${redisUrl} is not reachable: the Redis arms are skipped.`);

  log('Starting servers…');
  const start = async (name: string, entry: string, env: Record<string, string>, ready: string) => {
    const t = await startTarget(name, entry, env, ready);
    cleanups.push(() => t.stop());
    return t;
  };
  const service = await start('service (Postgres)', 'src/server.ts', { ...serviceEnv, ...pgDb.env }, '/readyz');
  const serviceWarn = await start('service (Postgres, LOG_LEVEL=warn)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, LOG_LEVEL: 'warn' }, '/readyz');
  const serviceRedis = withRedis
    ? await start('service (Postgres, Redis limiter)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, REDIS_URL: redisUrl }, '/readyz')
    : undefined;
  const serviceRedisEach = withRedis
    ? await start('service (Postgres, Redis limiter, batch 1)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, REDIS_URL: redisUrl, RATE_LIMIT_REDIS_BATCH: '1' }, '/readyz')
    : undefined;
  const serviceCluster = withRedis
    ? await start('service (2 workers, Redis limiter)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, REDIS_URL: redisUrl, WORKERS: '2', DB_POOL_MAX: '5' }, '/readyz')
    : undefined;
  const serviceChecked = await start('service (Postgres, RESPONSE_VALIDATION)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, RESPONSE_VALIDATION: 'true' }, '/readyz');
  const serviceNoMetrics = await start('service (Postgres, METRICS=false)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, METRICS: 'false' }, '/readyz');
  // Traces on, sent to a sink standing for a collector (node:http answering 200 to everything, a process of its own).
  const otlpSink = await start('OTLP sink (bare node:http)', 'bench/bareServer.ts', {}, '/');
  const serviceTraced = await start('service (Postgres, OTLP traces)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, OTEL_EXPORTER_OTLP_ENDPOINT: otlpSink.baseUrl }, '/readyz');
  const serviceOnePool = await start('service (Postgres, DB_POOL_MAX=1)', 'src/server.ts', { ...serviceEnv, ...pgDb.env, DB_POOL_MAX: '1' }, '/readyz');
  const serviceEmbedded = await start('service (PGlite)', 'src/server.ts', { ...serviceEnv, ...embedded.env }, '/readyz');
  const fastify = await start('bare Fastify + same SQL and pool', 'bench/baselineServer.ts', pgDb.env, '/pets/1');
  const bare = await start('bare node:http, constant array', 'bench/bareServer.ts', {}, '/');
  const serviceOrders = await start('service (Postgres, orders)', 'src/server.ts', { ...serviceEnv, ...ordersDb.env }, '/readyz');
  const fastifyOrders = await start('bare Fastify + same SQL (orders)', 'bench/baselineServer.ts', { ...ordersDb.env, ORDER_OWNER: String(orderable.owner) }, '/pets/1');
  // As shipped, anonymous limits included: the flood of unknown keys meets them.
  const serviceDefaults = await start('service (default anonymous limits)', 'src/server.ts', { REDIS_PREFIX: serviceEnv.REDIS_PREFIX, ...pgDb.env }, '/readyz');
  const targets: Target[] = [service, serviceWarn, ...(serviceRedis ? [serviceRedis] : []), ...(serviceRedisEach ? [serviceRedisEach] : []), ...(serviceCluster ? [serviceCluster] : []), serviceChecked, serviceNoMetrics, serviceTraced, serviceOnePool, serviceEmbedded, fastify, bare, serviceDefaults, serviceOrders, fastifyOrders];

  const auth = (key: string) => ({ authorization: `Bearer ${key}` });
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify({ name: 'Bench', categoryId: 1 });
  const serviceArms = (t: Target, key: string, prefix: string): Record<string, Arm> => ({
    list20: { name: `${prefix} listPets limit=20`, url: `${t.baseUrl}/v1/pets?limit=20`, headers: auth(key), pid: t.pid, allocatedBytes: t.allocatedBytes },
    list100: { name: `${prefix} listPets limit=100`, url: `${t.baseUrl}/v1/pets?limit=100`, headers: auth(key) },
    listStatus: { name: `${prefix} listPets status=pending`, url: `${t.baseUrl}/v1/pets?limit=20&status=pending`, headers: auth(key) },
    create: { name: `${prefix} createPet`, url: `${t.baseUrl}/v1/pets`, method: 'POST', headers: { ...auth(key), ...json }, body, expect: 201, pid: t.pid, allocatedBytes: t.allocatedBytes },
    get: { name: `${prefix} getPet`, url: `${t.baseUrl}/v1/pets/1`, headers: auth(key), pid: t.pid, allocatedBytes: t.allocatedBytes },
    unauthorized: { name: `${prefix} 401 (no key)`, url: `${t.baseUrl}/v1/pets`, expect: 401 },
  });
  const svc = serviceArms(service, pgDb.key, 'service');
  const warn = serviceArms(serviceWarn, pgDb.key, 'service at warn');
  const redis = serviceRedis ? serviceArms(serviceRedis, pgDb.key, 'service+Redis') : undefined;
  const clustered = serviceCluster ? serviceArms(serviceCluster, pgDb.key, 'service 2 workers') : undefined;
  const redisEach = serviceRedisEach ? serviceArms(serviceRedisEach, pgDb.key, 'service+Redis batch 1') : undefined;
  const lite = serviceArms(serviceEmbedded, embedded.key, 'service on PGlite');
  const checked = serviceArms(serviceChecked, pgDb.key, 'service+response validation');
  const noMetrics = serviceArms(serviceNoMetrics, pgDb.key, 'service without metrics');
  const traced = serviceArms(serviceTraced, pgDb.key, 'service with traces');
  const onePool = serviceArms(serviceOnePool, pgDb.key, 'service with 1 connection');
  const base: Record<string, Arm> = {
    list20: { name: 'Fastify listPets limit=20', url: `${fastify.baseUrl}/pets?limit=20`, pid: fastify.pid, allocatedBytes: fastify.allocatedBytes },
    list100: { name: 'Fastify listPets limit=100', url: `${fastify.baseUrl}/pets?limit=100` },
    listStatus: { name: 'Fastify listPets status=pending', url: `${fastify.baseUrl}/pets?limit=20&status=pending` },
    create: { name: 'Fastify createPet', url: `${fastify.baseUrl}/pets`, method: 'POST', headers: json, body, expect: 201, pid: fastify.pid, allocatedBytes: fastify.allocatedBytes },
    get: { name: 'Fastify getPet', url: `${fastify.baseUrl}/pets/1`, pid: fastify.pid, allocatedBytes: fastify.allocatedBytes },
  };
  const constant: Arm = { name: 'node:http constant array', url: `${bare.baseUrl}/` };
  // Each placeOrder takes a pet nobody has ordered (one sequence for both servers, one database).
  const newOrder = () => JSON.stringify({ petId: orderable.nextPet() });
  const orderArms: Record<string, Arm> = {
    servicePlace: { name: 'service placeOrder', url: `${serviceOrders.baseUrl}/v1/store/orders`, method: 'POST', headers: { ...auth(ordersDb.key), ...json }, body: newOrder, expect: 201, pid: serviceOrders.pid, allocatedBytes: serviceOrders.allocatedBytes },
    ceilingPlace: { name: 'Fastify placeOrder', url: `${fastifyOrders.baseUrl}/store/orders`, method: 'POST', headers: json, body: newOrder, expect: 201, pid: fastifyOrders.pid, allocatedBytes: fastifyOrders.allocatedBytes },
    serviceList: { name: 'service listOrders limit=20', url: `${serviceOrders.baseUrl}/v1/store/orders?limit=20`, headers: auth(ordersDb.key), pid: serviceOrders.pid, allocatedBytes: serviceOrders.allocatedBytes },
    ceilingList: { name: 'Fastify listOrders limit=20', url: `${fastifyOrders.baseUrl}/store/orders?limit=20`, pid: fastifyOrders.pid, allocatedBytes: fastifyOrders.allocatedBytes },
  };

  // The ceiling comparisons, at each concurrency: arms named `… @<connections>`.
  const ceiling: Record<number, Map<string, Measurement[]>> = {};
  for (const connections of settings.concurrencies) {
    log(`Against the ceiling at ${connections} connections (interleaved rounds)…`);
    const at = (arm: Arm): Arm => ({ ...arm, name: `${arm.name} @${connections}` });
    // Each service arm next to what it is compared with: the ceiling, the service at its defaults, at warn, without metrics.
    const arms = [
      traced.list20!, base.list20!, svc.list20!, warn.list20!, noMetrics.list20!,
      base.get!, svc.get!, warn.get!, noMetrics.get!,
      warn.create!, svc.create!, base.create!,
    ].map(at);
    ceiling[connections] = await rounds(arms, settings.rounds, { seconds: settings.seconds, connections, pairs: true });
  }
  log('Profiling the service (as shipped) and the ceiling, listPets at 32 connections…');
  const profileOpts = { connections: 32, seconds: quick ? 3 : 10 };
  const profiledService = await profiledCosts(
    { name: 'service (profiled)', entry: 'src/server.ts', env: { ...serviceEnv, ...pgDb.env }, readyPath: '/readyz' },
    (baseUrl) => ({ name: 'service', url: `${baseUrl}/v1/pets?limit=20`, headers: auth(pgDb.key) }),
    profileOpts,
  );
  const profiledCeiling = await profiledCosts(
    { name: 'ceiling (profiled)', entry: 'bench/baselineServer.ts', env: pgDb.env, readyPath: '/pets/1' },
    (baseUrl) => ({ name: 'ceiling', url: `${baseUrl}/pets?limit=20` }),
    profileOpts,
  );
  const decomposition = decompose(profiledService.costs, profiledCeiling.costs);

  log('Scraping /metrics after the ceiling runs…');
  const metricsExcerpt = await scrapeMetrics(service.metricsUrl);

  log('Throughput (maximum, interleaved rounds)…');
  // At 10 connections; the service's own list and get are the references of the comparisons below.
  const throughputArms = [
    svc.list20!, svc.get!, svc.list100!, base.list100!, svc.listStatus!, base.listStatus!, svc.unauthorized!, constant,
    ...(redis ? [redis.list20!, redis.get!] : []),
    ...(redisEach ? [redisEach.list20!, redisEach.get!] : []),
    ...(clustered ? [clustered.list20!, clustered.get!] : []),
    lite.list20!, lite.get!, onePool.list20!, onePool.get!,
    checked.list20!, checked.get!,
    orderArms.servicePlace!, orderArms.ceilingPlace!, orderArms.serviceList!, orderArms.ceilingList!,
  ];
  const throughput = await rounds(throughputArms, Math.min(settings.rounds, 3), { seconds: settings.seconds });

  log('Database round trips per request (known key)…');
  const roundTrips = await transactionsPerRequest(pgDb.env.DATABASE_URL!, svc.list20!);

  log('Latency at a fixed rate…');
  const latencyArms = [svc.list20!, base.list20!, ...(redis ? [redis.list20!] : []), lite.list20!, svc.get!];
  // The rate: 60% of the slowest of these arms' maxima (the ceiling's at 10 connections for bare Fastify).
  const maximum = (name: string) => throughput.get(name) ?? ceiling[settings.connections]?.get(`${name} @${settings.connections}`);
  const slowest = Math.min(...latencyArms.map((a) => median(maximum(a.name)!.map((m) => m.rps))));
  const rate = Math.max(10, Math.floor(slowest * 0.6));
  const latency = await rounds(latencyArms, settings.latencyRounds, { seconds: settings.latencySeconds, rate });

  log('A burst of unknown keys against known-key traffic…');
  const burst = await unknownKeyBurst(serviceDefaults, serviceArms(serviceDefaults, pgDb.key, 'service').get!, rate);

  log(`Scale: ${SCALE_PETS.toLocaleString('en')} pets…`);
  const scale = await scaleWithData(rate);

  log('Serializers: a listPets page by fast-json-stringify and by JSON.stringify…');
  const serializers = compareSerializers(quick ? 2 : 5, quick ? 50_000 : 200_000);

  log('The create ceiling of the id-order lock, by number of instances…');
  const createCeiling = await runNode(['--import', 'tsx', 'bench/createCeiling.ts', ...(quick ? ['--seconds', '1', '--rounds', '1'] : [])]);

  log('The index of issued API keys: memory for a million keys…');
  const keyIndex = JSON.parse(await runNode(['--expose-gc', '--import', 'tsx', 'bench/keyIndexMemory.ts', '1000000'])) as Report['keyIndex'];

  log('PGlite, layer by layer…');
  const pglite = await pgliteBreakdown({ pets: SMALL_PETS, seconds: 1, rounds: quick ? 2 : 3, log, adminUrl });

  const peakRss = Object.fromEntries(targets.map((t) => [t.name, t.peakRssMiB()]));
  return {
    quick,
    settings,
    durationSeconds: (Date.now() - started) / 1000,
    ceiling,
    metricsExcerpt,
    decomposition,
    throughput,
    latency,
    latencyRate: rate,
    roundTrips,
    burst,
    scale,
    pglite,
    createCeiling: createCeiling.trim(),
    serializers,
    keyIndex,
    peakRss,
    versions: await versions(),
    pets: SMALL_PETS,
  };
}

/** The service's own /metrics after the load: the lines an operator looks at first. */
async function scrapeMetrics(metricsUrl: string): Promise<string> {
  const text = await (await fetch(metricsUrl)).text();
  const wanted = /^animal_store_(http_request_duration_seconds_(count|sum)|rate_limit_decisions_total|rate_limit_mode|idempotent_replays_total|db_pool|db_query_duration_seconds_(count|sum))|^animal_store_http_request_duration_seconds_bucket\{le="(0\.001|0\.005|0\.025|\+Inf)",operation="listPets",status_class="2xx"\}|^(process_cpu_seconds_total|nodejs_eventloop_lag_p99_seconds|process_resident_memory_bytes) /;
  return text.split('\n').filter((line) => wanted.test(line)).join('\n');
}

/** Transactions the database committed per request (pg_stat_database), over one run of an arm. */
async function transactionsPerRequest(databaseUrl: string, arm: Arm) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const name = new URL(databaseUrl).pathname.slice(1);
  // Backends report their counts when they exit: end the service's connections to read them now.
  const flush = async () => {
    await client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [name]);
    await new Promise((r) => setTimeout(r, 300));
    await client.query('SELECT pg_stat_clear_snapshot()');
    return Number((await client.query(`SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, [name])).rows[0].xact_commit);
  };
  const before = await flush();
  const m = await measure(arm, { seconds: settings.seconds, connections: settings.connections });
  const after = await flush();
  await client.end();
  // Our own two reads of pg_stat_database count as transactions too.
  return { requests: m.requests, transactions: after - before - 1, perRequest: (after - before - 1) / m.requests, invalid: m.invalid };
}

/**
 * getPet at a fixed rate while another client (its own process) floods the service at the
 * same rate, once with a new random key per request (each a cache miss and a database
 * lookup) and once with no key (no database work): the difference is what unknown keys
 * cost the callers with known ones.
 */
async function unknownKeyBurst(service: Target, get: Arm, rate: number) {
  const result: Record<string, Measurement[]> = { 'unknown keys': [], 'no keys': [] };
  // The known key's client was already at work before the flood began (its key verified).
  await measure(get, { seconds: settings.warmupSeconds, connections: settings.connections });
  for (let r = 0; r < settings.latencyRounds; r++) {
    for (const mode of rotate(['unknown', 'none'] as const, r)) {
      const flood = runFlood(`${service.baseUrl}/v1/pets/1`, rate, settings.latencySeconds + 1, mode);
      await new Promise((resolve) => setTimeout(resolve, 500)); // let the flood reach its rate
      const main = await measure(get, { seconds: settings.latencySeconds, connections: settings.connections, rate });
      const floodResult = await flood;
      // 401 until the address's quota for requests without a valid key is spent, 429 after.
      const wrong = Object.keys(floodResult.statusCodeStats).filter((code) => code !== '401' && code !== '429');
      if (wrong.length || floodResult.errors) main.invalid = `flood answered ${JSON.stringify(floodResult.statusCodeStats)}, ${floodResult.errors} errors`;
      result[mode === 'unknown' ? 'unknown keys' : 'no keys']!.push(main);
      log(`  round ${r + 1} getPet during ${mode === 'unknown' ? 'unknown-key' : 'no-key'} flood: p50 ${main.p50.toFixed(2)} ms  p99 ${main.p99.toFixed(2)} ms${main.invalid ? `  INVALID: ${main.invalid}` : ''}`);
    }
  }
  return result;
}

async function runFlood(url: string, rate: number, seconds: number, mode: 'unknown' | 'none') {
  const res = await runScript('bench/flood.ts', [url, String(rate), String(seconds), mode], {}, (seconds + 60) * 1000);
  if (res.code !== 0) throw new Error(`flood exited with ${res.code}:\n${res.stderr}`);
  return JSON.parse(res.stdout) as { statusCodeStats: Record<string, { count: number }>; errors: number };
}

/** First page against a page deep in the cursor chain, with and without the status filter, on a large table. */
async function scaleWithData(rate: number) {
  const seededAt = Date.now();
  const db = await createPostgresDatabase(adminUrl, `as_bench_scale_${runId}`, SCALE_PETS);
  const seedSeconds = (Date.now() - seededAt) / 1000;
  cleanups.push(() => db.drop());
  const t = await startTarget('service (1M pets)', 'src/server.ts', { ...serviceEnv, ...db.env }, '/readyz');
  cleanups.push(() => t.stop());
  const deepId = SCALE_PETS - 10_000;
  const cursor = encodeCursor(deepId);
  const headers = { authorization: `Bearer ${db.key}` };
  const arms: Arm[] = [
    { name: 'first page', url: `${t.baseUrl}/v1/pets?limit=20`, headers },
    { name: `page after id ${deepId.toLocaleString('en')}`, url: `${t.baseUrl}/v1/pets?limit=20&cursor=${cursor}`, headers },
    { name: 'first page, status=sold', url: `${t.baseUrl}/v1/pets?limit=20&status=sold`, headers },
    { name: `page after id ${deepId.toLocaleString('en')}, status=sold`, url: `${t.baseUrl}/v1/pets?limit=20&status=sold&cursor=${cursor}`, headers },
  ];
  const latency = await rounds(arms, settings.latencyRounds, { seconds: settings.latencySeconds, rate });
  const explain = async (sql: string, params: unknown[]) =>
    (await db.db.pool.query(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`, params)).rows
      .map((r) => r['QUERY PLAN'] as string)
      .join('\n');
  const plans = {
    [LIST]: await explain(LIST, [deepId, 21]),
    [LIST_BY_STATUS]: await explain(LIST_BY_STATUS, [deepId, 21, 'sold']),
  };
  await t.stop();
  return { pets: SCALE_PETS, seedSeconds, arms: arms.map((a) => a.name), latency, plans };
}

/** Runs node with `args` in the repo; its stdout (it must exit 0). */
function runNode(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { cwd: projectRoot, maxBuffer: 1 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`node ${args.join(' ')}: ${stderr}`)) : resolve(stdout))),
  );
}

async function versions() {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const postgres = (await client.query('SHOW server_version')).rows[0].server_version as string;
  await client.end();
  const { PGlite } = await import('@electric-sql/pglite');
  const lite = await PGlite.create();
  const pglite = (await lite.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
  await lite.close();
  return { node: process.version, postgres, pglite };
}

// What is left on Ctrl-C or a failure (databases, servers, folders) is undone by lib/cleanup.ts.
await runCommand(async () => {
  try {
    const report = await main();
    const file = path.join(projectRoot, 'BENCHMARKS.md');
    const { markdown, failures } = renderReport(report);
    await writeFile(file, markdown);
    log(`\nWrote ${path.relative(process.cwd(), file)} in ${report.durationSeconds.toFixed(0)} s.`);
    // A missed target fails the run, so that a regression is seen.
    if (failures.length) log(`Targets missed or arms invalid:\n  ${failures.join('\n  ')}`);
    else log('Every target met.');
    return failures.length ? 1 : 0;
  } finally {
    await cleanup();
  }
});
