/**
 * npm run bench: the service against its same-SQL ceiling on this machine, in paired rounds;
 * writes BENCHMARKS.md and exits 1 when a target is missed (bench/README.md).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../src/paths.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { runCommand } from '../test/helpers/cleanup.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { commitOf, prepareBaselineBuild } from './baselineBuild.js';
import { createBenchDatabase, type BenchDatabase } from './data.js';
import { measureDeliveries, subscribe, type EventsResult } from './events.js';
import { median, pairedRounds, type Arm, type Measurement } from './load.js';
import { advisoryLocksIn, watchAdvisoryLocks, type Statements } from './locks.js';
import { countRoundTrips, startProxy, type Proxy } from './roundTrips.js';
import { startReceiver } from './receiver.js';
import { DELIVERY_BASELINE, renderReport, type Report } from './report.js';
import { build, startTarget, type Target } from './targets.js';

/** The baseline build of the full run: main before issue 35, whose every createPet took the one id-order lock. */
const DEFAULT_BASELINE = '1a5772a';

const USAGE = `Usage: npm run bench [-- --quick | --creates | --webhooks] [--baseline-build <git-rev>] [--round-trip-delay-ms <ms>]
       npm run bench:creates [-- --quick] [--baseline-build <git-rev>] [--round-trip-delay-ms <ms>]   (the same as --creates)

Measures the service as built (npm run build) against its ceiling, bare Fastify running the
same SQL through a plain pg.Pool, in paired rounds at 32 connections, then latency at a fixed
rate, then webhook deliveries (per second, and commit-to-receipt at 300 creates/s); rewrites
BENCHMARKS.md and exits 1 when a target is missed. About 10 minutes.
createPet also runs against a baseline build, an earlier revision of the service built from a
temporary git worktree, in the same rounds (service / baseline build: issue 35's target), and
placeOrder too; the report says whether the ceiling's createPet statements take an advisory
lock. Every measured server reaches Postgres through a proxy of its own, which counts its round
trips (reported per request for every arm) and can add a delay to each.
  --quick    two rounds of 1 s (about a minute): prints the report, writes nothing,
             exits 1 only when an arm is invalid (wrong statuses, errors)
  --creates  only createPet (with its event and delivery job) and placeOrder against their
             ceilings: the writes per second the database allows; prints the report
  --webhooks only the webhook part as the full run has it: createPet's rounds (which queue
             its backlog), then deliveries (the drain, then commit-to-receipt at 300 creates/s);
             prints the report (about 3 minutes)
  --baseline-build <git-rev>
             the revision to build and run as the baseline (git worktree add --detach, npm ci
             unless its package-lock.json is this checkout's, npm run build; removed at the end).
             The full run builds ${DEFAULT_BASELINE} (main before issue 35) unless given another;
             --quick and --creates run a baseline only when this is given.
  --round-trip-delay-ms <ms>
             holds each database round trip of the measured servers back by this many ms
             (default 0), as a database one network hop away would: try 1. The report
             is then for that delay; a full run with one prints it and writes nothing.
Needs Postgres (BENCH_DATABASE_URL, else DATABASE_URL, else 127.0.0.1:5432). Its databases,
servers and worktree are removed at the end, on failure and on Ctrl-C.`;

const { values: args } = parseCommandLine(USAGE, { options: { quick: { type: 'boolean' }, creates: { type: 'boolean' }, webhooks: { type: 'boolean' }, 'baseline-build': { type: 'string' }, 'round-trip-delay-ms': { type: 'string' } } });
const quick = args.quick === true;
const creates = args.creates === true;
const webhooks = args.webhooks === true;
const roundTripDelayMs = Number(args['round-trip-delay-ms'] ?? 0);
if (!Number.isFinite(roundTripDelayMs) || roundTripDelayMs < 0 || roundTripDelayMs > 1000) {
  process.stderr.write(`--round-trip-delay-ms: a number of milliseconds from 0 to 1000, not ${args['round-trip-delay-ms']}\n\n${USAGE}\n`);
  process.exit(2);
}
/** A run of some targets only, or with a delay (BENCHMARKS.md is the plain machine's): it prints its report and writes nothing. */
const partial = quick || creates || webhooks || roundTripDelayMs > 0;
const baselineRev = args['baseline-build'] ?? (partial ? undefined : DEFAULT_BASELINE);
const settings = quick
  ? { rounds: 2, seconds: 1, warmupSeconds: 0.5, connections: 32, latencyConnections: 10, rateShare: 0.6, eventSeconds: 3, drainSeconds: 10 }
  : { rounds: 5, seconds: 5, warmupSeconds: 2, connections: 32, latencyConnections: 10, rateShare: 0.6, eventSeconds: 20, drainSeconds: 30 };
/** createPet's fixed rate while its events are delivered (issue 35's target: p99 commit-to-receipt ≤ 250 ms). */
const CREATES_PER_SECOND = 300;
const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const onMeasured = (r: number, arm: Arm, m: Measurement) =>
  log(`  round ${r + 1} ${arm.name.padEnd(38)} ${m.rps.toFixed(0).padStart(6)} req/s  p99 ${m.p99.toFixed(2).padStart(7)} ms  ${m.cpuMicros.toFixed(0).padStart(5)} µs CPU${m.roundTrips !== undefined ? `  ${m.roundTrips.toFixed(2).padStart(5)} round trips` : ''}${m.invalid ? `  INVALID: ${m.invalid}` : ''}`);

const cleanups: Array<() => Promise<unknown>> = [];

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

async function main(): Promise<Report> {
  const started = Date.now();
  const loadAtStart = loadAverage();
  log(`Building (npm run build, and the ceiling)…`);
  build();
  const baselineBuild = baselineRev === undefined ? undefined : await prepareBaselineBuild(baselineRev, log);
  if (baselineBuild) cleanups.push(baselineBuild.remove);
  const sizes = { pets: 10_000, owned: 1_000, orderable: 200_000, placed: 1_000 };
  log('Preparing the database…');
  const db = await createBenchDatabase(adminUrl, `as_bench_${process.pid}`, sizes);
  cleanups.push(db.drop);
  // The baseline build gets a database of its own, seeded the same way but migrated and keyed by
  // its own code: this checkout's migrations may change what its statements read and write.
  let baselineDb: BenchDatabase | undefined;
  if (baselineBuild) {
    log('Preparing the baseline build\'s database…');
    baselineDb = await createBenchDatabase(adminUrl, `as_bench_${process.pid}_baseline`, sizes, { root: baselineBuild.root });
    cleanups.push(baselineDb.drop);
  }
  const start = async (name: string, entry: string, env: Record<string, string>, ready: string) => {
    const t = await startTarget(name, entry, env, ready);
    cleanups.push(t.stop);
    return t;
  };
  // Each measured server's own proxy to Postgres: its round trips counted (and delayed) apart from the others'.
  const proxy = async (databaseUrl: string) => {
    const p = await startProxy(databaseUrl, roundTripDelayMs);
    cleanups.push(p.stop);
    return p;
  };
  const serviceProxy = await proxy(db.env.DATABASE_URL);
  const ceilingProxy = await proxy(db.env.DATABASE_URL);
  const baselineProxy = baselineDb ? await proxy(baselineDb.env.DATABASE_URL) : undefined;
  const receiver = await startReceiver();
  cleanups.push(receiver.close);
  // The service as shipped: LOG_LEVEL=info (a line per request) and metrics on, its default pool;
  // its webhook workers off, so that its CPU is its requests' (a worker delivers afterwards).
  const shipped = { ...db.env, LOG_LEVEL: 'info', METRICS: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') };
  const service = await start('service', 'dist/src/server.js', { ...shipped, DATABASE_URL: serviceProxy.databaseUrl, WEBHOOK_CONCURRENCY: '0' }, '/readyz');
  // Every change of both servers then writes its events and queues one delivery for each the account reads.
  await subscribe(service.baseUrl, db.key, receiver.url);
  const ceiling = await start('ceiling', 'dist/bench/baselineServer.js', { DATABASE_URL: ceilingProxy.databaseUrl, ORDER_OWNER: String(db.owner), OPEN_ORDERS_ENTERPRISE: String(db.maxOpenOrders) }, '/pets/1');
  // The baseline build as the service runs (its workers off too), its account subscribed the same way.
  const baseline = baselineBuild && baselineDb && baselineProxy
    ? await start('baseline', path.join(baselineBuild.root, 'dist/src/server.js'), { ...shipped, DATABASE_URL: baselineProxy.databaseUrl, WEBHOOK_CONCURRENCY: '0' }, '/readyz')
    : undefined;
  // Its own receiver: its deliveries are counted apart from the service's (their event ids overlap).
  const baselineReceiver = baseline ? await startReceiver() : undefined;
  if (baselineReceiver) cleanups.push(baselineReceiver.close);
  if (baseline && baselineDb && baselineReceiver) await subscribe(baseline.baseUrl, baselineDb.key, baselineReceiver.url);
  // Statistics of every table as the rounds find them (autovacuum may be off): with the endpoint subscribed.
  await db.analyze();
  await baselineDb?.analyze();
  const listPlan = await db.listPlan();
  log(`listPets limit=20 plans as: ${listPlan}`);
  // What the ceiling's createPet runs (src/pets/sql.ts's statement, as the service's repository runs it): does it lock?
  const statements = (await (await fetch(`${ceiling.baseUrl}/statements`)).json()) as Statements;
  const ceilingLocks = advisoryLocksIn(statements.createPet);
  log(`The ceiling's createPet statements take ${ceilingLocks.length ? ceilingLocks.join(', ') : 'no advisory lock'}`);

  const json = { 'content-type': 'application/json' };
  const auth = { authorization: `Bearer ${db.key}` };
  const newPet = JSON.stringify({ name: 'Bench', categoryId: 1 });
  // Each placeOrder takes a pet nobody has ordered, each updatePet the next pet of the account (one sequence for both servers).
  const newOrder = () => ({ body: JSON.stringify({ petId: db.nextPet() }) });
  const pair = (op: string, path: string, extra: Partial<Arm> = {}): [Arm, Arm] => [
    { name: `ceiling ${op}`, url: `${ceiling.baseUrl}${path}`, pid: ceiling.pid, ...extra, headers: { ...extra.headers } },
    { name: `service ${op}`, url: `${service.baseUrl}/v1${path}`, pid: service.pid, ...extra, headers: { ...extra.headers, ...auth } },
  ];
  const post = (body: Partial<Arm>): Partial<Arm> => ({ method: 'POST', headers: json, ...body, expect: 201 });
  const pairs = {
    listPets: pair('listPets limit=20', '/pets?limit=20'),
    listPetsByCategory: pair('listPets categoryId=7 limit=20', '/pets?categoryId=7&limit=20'),
    getPet: pair('getPet', '/pets/1'),
    createPet: pair('createPet', '/pets', post({ body: newPet })),
    updatePet: pair('updatePet', '/pets/', { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, next: db.nextPatch }),
    placeOrder: pair('placeOrder', '/store/orders', post({ next: newOrder })),
    listOrders: pair('listOrders limit=20', '/store/orders?limit=20'),
  };
  // The same read with the ETag the service gave it: a 304, measured right next to the 200 it replaces.
  const notModified = async (op: string, path: string): Promise<Arm> => {
    const etag = (await fetch(`${service.baseUrl}/v1${path}`, { headers: auth })).headers.get('etag');
    if (!etag) throw new Error(`${op} answered without an ETag`);
    return { name: `service ${op} 304`, url: `${service.baseUrl}/v1${path}`, pid: service.pid, headers: { ...auth, 'if-none-match': etag }, expect: 304 };
  };
  // Right after the service's createPet: in every round, forwards or backwards, the service's runs next to both others.
  const baselineArm = (op: string, path: string, extra: Partial<Arm>): Arm[] =>
    baseline && baselineDb ? [{ name: `baseline ${op}`, url: `${baseline.baseUrl}/v1${path}`, pid: baseline.pid, ...extra, headers: { ...extra.headers, authorization: `Bearer ${baselineDb.key}` } }] : [];
  const baselineCreates = baselineArm('createPet', '/pets', post({ body: newPet }));
  // Issue 45's target: one account's placeOrder against the baseline build's, each taking pets of its own database.
  const baselineOrders = baselineArm('placeOrder', '/store/orders', post({ next: () => ({ body: JSON.stringify({ petId: baselineDb!.nextPet() }) }) }));
  // createPet with a new Idempotency-Key each (issue 45: at most one round trip more), the service's and the baseline build's; the ceiling keeps no keys.
  const keyed = (): Partial<Arm> => post({ next: () => ({ body: newPet, headers: { 'idempotency-key': randomUUID() } }) });
  const keyedCreates: Arm[] = [
    { name: 'service createPet with Idempotency-Key', url: `${service.baseUrl}/v1/pets`, pid: service.pid, ...keyed(), headers: { ...json, ...auth } },
    ...baselineArm('createPet with Idempotency-Key', '/pets', keyed()),
  ];
  const chosen = creates ? [...pairs.createPet, ...baselineCreates, ...pairs.placeOrder, ...baselineOrders] : webhooks ? [...pairs.createPet, ...baselineCreates] : [
    ...pairs.listPets, await notModified('listPets limit=20', '/pets?limit=20'), ...pairs.listPetsByCategory, ...pairs.getPet,
    await notModified('getPet', '/pets/1'), ...pairs.createPet, ...baselineCreates, ...keyedCreates, ...pairs.updatePet, ...pairs.placeOrder, ...baselineOrders, ...pairs.listOrders,
  ];
  // Round trips per request of every arm, from its server's proxy.
  const proxyOf = (arm: Arm) => (arm.pid === service.pid ? serviceProxy : arm.pid === ceiling.pid ? ceilingProxy : arm.pid === baseline?.pid ? baselineProxy : undefined);
  const proxies = new Map(chosen.flatMap((arm): Array<[string, Proxy]> => { const p = proxyOf(arm); return p ? [[arm.name, p]] : []; }));
  const roundTrips = countRoundTrips(proxies);
  // pg_locks while each createPet arm runs: an advisory lock held or awaited in its database.
  const dbName = (url: string) => new URL(url).pathname.slice(1);
  const watched = new Map([...pairs.createPet, ...baselineCreates].map((arm) => [arm.name, dbName(arm === baselineCreates[0] ? baselineDb!.env.DATABASE_URL : db.env.DATABASE_URL)]));
  const locks = await watchAdvisoryLocks(adminUrl, watched);
  cleanups.push(locks.close);
  log(`Throughput and CPU: ${settings.rounds} paired rounds of ${settings.seconds} s per arm at ${settings.connections} connections…`);
  const throughput = await pairedRounds(chosen, settings.rounds, { ...settings, onMeasured, around: (arm, run) => locks.around(arm, () => roundTrips(arm, run)) });

  let latency = new Map<string, Measurement[]>();
  let rate = 0;
  if (!creates && !webhooks) {
    // The same rate for both: a share of the slower one's median maximum, so that neither is saturated.
    const maxRps = (arm: Arm) => median(throughput.get(arm.name)!.map((m) => m.rps));
    rate = Math.max(10, Math.floor(settings.rateShare * Math.min(...pairs.listPets.map(maxRps))));
    log(`Latency: listPets at a fixed ${rate} req/s, ${settings.rounds} paired rounds at ${settings.latencyConnections} connections…`);
    latency = await pairedRounds(pairs.listPets, settings.rounds, { ...settings, connections: settings.latencyConnections, rate, onMeasured });
  }

  let events: EventsResult | undefined;
  let baselineEvents: EventsResult | undefined;
  if (!creates) {
    // A second instance with its workers on (WEBHOOK_CONCURRENCY default): it delivers what the rounds queued, then takes creates at a fixed rate.
    log(`Webhooks: a worker delivers the rounds' events (at most ${settings.drainSeconds} s), then createPet at ${CREATES_PER_SECOND}/s for ${settings.eventSeconds} s…`);
    const worker = await start('worker', 'dist/src/server.js', shipped, '/readyz');
    const arm: Arm = { name: `worker createPet at ${CREATES_PER_SECOND}/s`, url: `${worker.baseUrl}/v1/pets`, pid: worker.pid, ...post({ body: newPet }), headers: { ...json, ...auth } };
    events = await measureDeliveries(db.env.DATABASE_URL, receiver, arm, { rate: CREATES_PER_SECOND, seconds: settings.eventSeconds, warmupSeconds: settings.warmupSeconds, connections: settings.latencyConnections, drainSeconds: settings.drainSeconds });
    log(`  ${events.drain.delivered} of ${events.drain.queued} queued events delivered at ${events.drain.perSecond.toFixed(0)}/s; at ${CREATES_PER_SECOND} creates/s commit-to-receipt p50 ${events.p50} ms, p99 ${events.p99} ms${events.invalid ? `  INVALID: ${events.invalid}` : ''}`);
    await worker.stop();
    if (baselineBuild && baselineDb && baselineReceiver) {
      // The same with the baseline build's worker, on its database and backlog: delivery as it was (issue 42's drain target).
      log(`Webhooks, the baseline build's worker: the same…`);
      const baselineWorker = await start('baseline worker', path.join(baselineBuild.root, 'dist/src/server.js'), { ...shipped, ...baselineDb.env }, '/readyz');
      const baselineArm: Arm = { name: `baseline worker createPet at ${CREATES_PER_SECOND}/s`, url: `${baselineWorker.baseUrl}/v1/pets`, pid: baselineWorker.pid, ...post({ body: newPet }), headers: { ...json, authorization: `Bearer ${baselineDb.key}` } };
      baselineEvents = await measureDeliveries(baselineDb.env.DATABASE_URL, baselineReceiver, baselineArm, { rate: CREATES_PER_SECOND, seconds: settings.eventSeconds, warmupSeconds: settings.warmupSeconds, connections: settings.latencyConnections, drainSeconds: settings.drainSeconds });
      log(`  ${baselineEvents.drain.delivered} of ${baselineEvents.drain.queued} queued events delivered at ${baselineEvents.drain.perSecond.toFixed(0)}/s; at ${CREATES_PER_SECOND} creates/s commit-to-receipt p50 ${baselineEvents.p50} ms, p99 ${baselineEvents.p99} ms${baselineEvents.invalid ? `  INVALID: ${baselineEvents.invalid}` : ''}`);
      await baselineWorker.stop();
    }
  }

  return {
    quick,
    creates,
    webhooks,
    roundTripDelayMs,
    settings,
    rate,
    throughput,
    latency,
    events,
    baselineEvents,
    createPet: {
      ceilingLocks,
      locksSeen: locks.seen,
      targetBaseline: DEFAULT_BASELINE,
      ...(baselineBuild && {
        baseline: {
          rev: baselineBuild.rev,
          commit: baselineBuild.commit,
          subject: baselineBuild.subject,
          modules: baselineBuild.modules,
          isTarget: baselineBuild.sha === (await commitOf(DEFAULT_BASELINE)),
          isDeliveryTarget: baselineBuild.sha === (await commitOf(DELIVERY_BASELINE)),
        },
      }),
    },
    listPlan,
    metrics: await metricsLine(service),
    versions: { node: process.version, ...(await postgresSettings()) },
    load: [loadAtStart, loadAverage()],
    durationSeconds: (Date.now() - started) / 1000,
  };
}

/** Evidence that the measured service had its metrics on: the request counter it exported. */
async function metricsLine(service: Target): Promise<string> {
  const res = await fetch(service.metricsUrl);
  const text = await res.text();
  const line = text.split('\n').find((l) => /^animal_store_http_request_duration_seconds_count\{.*listPets.*2xx/.test(l));
  return `GET /metrics → ${res.status}${line ? `: \`${line}\`` : ''}`;
}

/** The server's version, and whether autovacuum runs (when it does not, only the benchmark's ANALYZE gives the planner statistics). */
async function postgresSettings(): Promise<{ postgres: string; autovacuum: string }> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const { rows } = await client.query<{ version: string; autovacuum: string }>(`SELECT current_setting('server_version') AS version, current_setting('autovacuum') AS autovacuum`);
  await client.end();
  return { postgres: rows[0]!.version, autovacuum: rows[0]!.autovacuum };
}

// What is left on Ctrl-C or a failure (database, servers) is undone by test/helpers/cleanup.ts.
await runCommand(async () => {
  try {
    const report = await main();
    const { markdown, missed, invalid } = renderReport(report);
    if (partial) process.stdout.write(`${markdown}\n`);
    else {
      await writeFile(path.join(projectRoot, 'BENCHMARKS.md'), markdown);
      log(`Wrote BENCHMARKS.md in ${report.durationSeconds.toFixed(0)} s.`);
    }
    const failures = partial ? invalid : [...invalid, ...missed];
    log(failures.length ? `Failed:\n  ${failures.join('\n  ')}` : 'Every target met.');
    return failures.length ? 1 : 0;
  } finally {
    for (const undo of cleanups.reverse()) await undo().catch((err: Error) => log(`cleanup: ${err.message}`));
  }
});
