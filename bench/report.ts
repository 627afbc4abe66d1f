import os from 'node:os';
import type { DecompositionRow } from './decomposition.js';
import type { Measurement } from './load.js';
import { renderPgliteBreakdown, type PgliteBreakdown } from './pgliteBreakdown.js';
import { median } from './stats.js';

type Results = Map<string, Measurement[]>;

export interface Report {
  quick: boolean;
  settings: { seconds: number; rounds: number; warmupSeconds: number; latencySeconds: number; latencyRounds: number; connections: number; concurrencies: number[] };
  durationSeconds: number;
  /** The comparisons with the ceiling, by number of connections (arms named `… @<connections>`). */
  ceiling: Record<number, Results>;
  /** Lines of the service's /metrics, scraped after the ceiling runs. */
  metricsExcerpt: string;
  /** Where the service's CPU per request goes against the ceiling's, from CPU profiles of listPets at 32 connections. */
  decomposition: DecompositionRow[];
  pets: number;
  throughput: Results;
  latency: Results;
  latencyRate: number;
  roundTrips: { requests: number; transactions: number; perRequest: number; invalid?: string | undefined };
  burst: Record<string, Measurement[]>;
  scale: { pets: number; seedSeconds: number; arms: string[]; latency: Results; plans: Record<string, string> };
  pglite: PgliteBreakdown;
  /** The table `npm run bench:logs` prints. */
  logWriters: string;
  /** The Markdown table `npm run bench:creates` prints. */
  createCeiling: string;
  serializers: Array<{ name: string; ns: number; bytes: number }>;
  keyIndex: { keys: number; bytes: number; bytesPerKey: number };
  peakRss: Record<string, number>;
  versions: { node: string; postgres: string; pglite: string };
}

interface Check {
  what: string;
  ratio: number | undefined;
  range: string;
  target: string;
  met: boolean | undefined;
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const invalidOf = (ms: Measurement[] | undefined) => ms?.find((m) => m.invalid)?.invalid;

/** The median of per-round ratios a/b: paired rounds cancel the drift of a shared, noisy machine. */
type Field = 'rps' | 'p50' | 'p99' | 'cpuMicros' | 'allocBytes';

function pairedRatio(results: Results, a: string, b: string, field: Field): Omit<Check, 'what' | 'target' | 'met'> & { invalid?: string } {
  const ra = results.get(a);
  const rb = results.get(b);
  if (!ra || !rb) return { ratio: undefined, range: 'not run' };
  const invalid = invalidOf(ra) ?? invalidOf(rb);
  if (invalid) return { ratio: undefined, range: `invalid: ${invalid}`, invalid };
  const ratios = ra.map((m, i) => (m[field] ?? NaN) / (rb[i]![field] ?? NaN));
  return { ratio: median(ratios), range: `${fmt(Math.min(...ratios))}–${fmt(Math.max(...ratios))}` };
}

export function renderReport(r: Report): { markdown: string; failures: string[] } {
  const failures: string[] = [];
  const checks: Check[] = [];
  const check = (what: string, results: Results, a: string, b: string, field: Field, target?: [string, (x: number) => boolean]) => {
    const p = pairedRatio(results, a, b, field);
    const met = target && p.ratio !== undefined ? target[1](p.ratio) : undefined;
    if (p.invalid) failures.push(`invalid: ${what}: ${p.invalid}`);
    else if (met === false) failures.push(`target missed: ${what} = ${fmt(p.ratio!)} (target ${target![0]})`);
    checks.push({ what, ratio: p.ratio, range: p.range, target: target?.[0] ?? '', met });
  };
  const atLeast = (x: number): [string, (v: number) => boolean] => [`≥ ${fmt(x)}`, (v) => v >= x];
  const atMost = (x: number): [string, (v: number) => boolean] => [`≤ ${fmt(x)}`, (v) => v <= x];
  // Issue 19's targets: judged at 32 connections (CPU, bytes) and at 10 and 32 (throughput).
  for (const c of r.settings.concurrencies) {
    const C = r.ceiling[c]!;
    const at = (name: string) => `${name} @${c}`;
    const at32 = c === 32;
    const ceilingOf = (op: string) => at(`Fastify ${op}`);
    for (const op of ['listPets limit=20', 'getPet', 'createPet']) {
      const list = op === 'listPets limit=20';
      check(`${op} at ${c} connections: throughput, service / ceiling`, C, at(`service ${op}`), ceilingOf(op), 'rps', list ? atLeast(0.8) : undefined);
      check(`${op} at ${c} connections: server CPU per request, service / ceiling`, C, at(`service ${op}`), ceilingOf(op), 'cpuMicros', at32 && (list || op === 'createPet') ? atMost(1.35) : undefined);
      check(`${op} at ${c} connections: server CPU per request, service at warn / ceiling`, C, at(`service at warn ${op}`), ceilingOf(op), 'cpuMicros', at32 && list ? atMost(1.25) : undefined);
      check(`${op} at ${c} connections: bytes allocated per request, service / ceiling`, C, at(`service ${op}`), ceilingOf(op), 'allocBytes', at32 && list ? atMost(1.3) : undefined);
      check(`${op} at ${c} connections: bytes allocated per request, service at warn / ceiling`, C, at(`service at warn ${op}`), ceilingOf(op), 'allocBytes', at32 && list ? atMost(1.3) : undefined);
    }
    check(`listPets limit=20 at ${c} connections: throughput, service at warn / ceiling`, C, at('service at warn listPets limit=20'), ceilingOf('listPets limit=20'), 'rps', atLeast(0.8));
    // The costs of the two features that are most of the difference: the info request line and the metrics.
    check(`listPets limit=20 at ${c} connections: server CPU per request, info / warn (the request line)`, C, at('service listPets limit=20'), at('service at warn listPets limit=20'), 'cpuMicros');
    check(`listPets limit=20 at ${c} connections: server CPU per request, metrics on / off`, C, at('service listPets limit=20'), at('service without metrics listPets limit=20'), 'cpuMicros');
    check(`getPet at ${c} connections: server CPU per request, metrics on / off`, C, at('service getPet'), at('service without metrics getPet'), 'cpuMicros');
    check(`listPets limit=20 at ${c} connections: traces on (OTLP to a sink) / off`, C, at('service with traces listPets limit=20'), at('service listPets limit=20'), 'rps');
  }
  const T = r.throughput;
  check('listPets limit=100: service / bare Fastify', T, 'service listPets limit=100', 'Fastify listPets limit=100', 'rps');
  check('listPets status filter: service / bare Fastify', T, 'service listPets status=pending', 'Fastify listPets status=pending', 'rps');
  check('placeOrder: service / bare Fastify', T, 'service placeOrder', 'Fastify placeOrder', 'rps');
  check('placeOrder: server CPU per request, service / bare Fastify', T, 'service placeOrder', 'Fastify placeOrder', 'cpuMicros');
  check('listOrders limit=20: service / bare Fastify', T, 'service listOrders limit=20', 'Fastify listOrders limit=20', 'rps');
  check('listOrders limit=20: server CPU per request, service / bare Fastify', T, 'service listOrders limit=20', 'Fastify listOrders limit=20', 'cpuMicros');
  check('401 path: service / bare node:http', T, 'service 401 (no key)', 'node:http constant array', 'rps');
  check('listPets limit=20: service / bare node:http', T, 'service listPets limit=20', 'node:http constant array', 'rps');
  check('listPets limit=20: Redis limiter / in-process limiter', T, 'service+Redis listPets limit=20', 'service listPets limit=20', 'rps', ['≥ 0.85', (x) => x >= 0.85]);
  check('getPet: Redis limiter / in-process limiter', T, 'service+Redis getPet', 'service getPet', 'rps', ['≥ 0.85', (x) => x >= 0.85]);
  check('listPets limit=20: Redis limiter, a round trip per request (batch 1) / in-process', T, 'service+Redis batch 1 listPets limit=20', 'service listPets limit=20', 'rps');
  check('getPet: Redis limiter, a round trip per request (batch 1) / in-process', T, 'service+Redis batch 1 getPet', 'service getPet', 'rps');
  check('listPets limit=20: RESPONSE_VALIDATION on / off', T, 'service+response validation listPets limit=20', 'service listPets limit=20', 'rps');
  check('getPet: RESPONSE_VALIDATION on / off', T, 'service+response validation getPet', 'service getPet', 'rps');
  check('listPets limit=20: 2 workers (cluster, Redis) / 1 process (Redis)', T, 'service 2 workers listPets limit=20', 'service+Redis listPets limit=20', 'rps');
  check('getPet: 2 workers (cluster, Redis) / 1 process (Redis)', T, 'service 2 workers getPet', 'service+Redis getPet', 'rps');
  check('listPets limit=20: PGlite / Postgres', T, 'service on PGlite listPets limit=20', 'service listPets limit=20', 'rps');
  check('getPet: PGlite / Postgres', T, 'service on PGlite getPet', 'service getPet', 'rps');
  check('listPets limit=20: Postgres with 1 connection / pool of 10', T, 'service with 1 connection listPets limit=20', 'service listPets limit=20', 'rps');
  check('getPet: Postgres with 1 connection / pool of 10', T, 'service with 1 connection getPet', 'service getPet', 'rps');
  check('listPets limit=20: PGlite / Postgres with 1 connection', T, 'service on PGlite listPets limit=20', 'service with 1 connection listPets limit=20', 'rps');
  const L = r.latency;
  check('listPets limit=20 p50 latency at fixed rate: service / bare Fastify', L, 'service listPets limit=20', 'Fastify listPets limit=20', 'p50');
  check('listPets limit=20 p99 latency at fixed rate: service / bare Fastify', L, 'service listPets limit=20', 'Fastify listPets limit=20', 'p99');
  const S = r.scale.latency;
  const [first, deep, firstSold, deepSold] = r.scale.arms as [string, string, string, string];
  check('deep page / first page, p50 latency', S, deep, first, 'p50', ['≤ 1.20', (x) => x <= 1.2]);
  check('deep page / first page, status=sold, p50 latency', S, deepSold, firstSold, 'p50', ['≤ 1.20', (x) => x <= 1.2]);
  check('deep page / first page, p99 latency', S, deep, first, 'p99');
  check('deep page / first page, status=sold, p99 latency', S, deepSold, firstSold, 'p99');
  const burst = new Map(Object.entries(r.burst));
  check('getPet p50 during a flood of unknown keys / during a flood without keys', burst, 'unknown keys', 'no keys', 'p50', ['≤ 1.20', (x) => x <= 1.2]);
  check('getPet p99 during a flood of unknown keys / during a flood without keys', burst, 'unknown keys', 'no keys', 'p99');

  const rt = r.roundTrips;
  const rtMet = !rt.invalid && rt.perRequest < 1.05;
  if (rt.invalid) failures.push(`invalid: database round trips: ${rt.invalid}`);
  else if (!rtMet) failures.push(`target missed: ${fmt(rt.perRequest)} database transactions per listPets request (target 1.00: none for the key)`);

  const planChecks = Object.entries(r.scale.plans).map(([sql, plan]) => {
    const ok = /Index Scan/.test(plan) && !/Seq Scan|Sort/.test(plan);
    if (!ok) failures.push(`target missed: the plan of "${sql}" is not an index range scan`);
    return { sql, plan, ok };
  });

  const cpu = os.cpus();
  const lines: string[] = [];
  const out = (s = '') => lines.push(s);
  out('# Benchmarks');
  out();
  out(`Generated by \`npm run bench${r.quick ? ' -- --quick' : ''}\` on ${new Date().toISOString().slice(0, 10)}; every number below comes from that one run`);
  out('on one machine. Regenerate it with `npm run bench` (about 20 minutes; it exits 1 when a target is missed) or `npm run bench -- --quick` (about three minutes, fewer and shorter rounds).');
  out();
  out(`- **Machine**: ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB RAM, ${os.type()} ${os.release()} (a shared VM: absolute numbers are this machine's only)`);
  out(`- **Versions**: Node ${r.versions.node}, PostgreSQL ${r.versions.postgres} (local, TCP), PGlite (Postgres ${r.versions.pglite}, WASM)`);
  out(`- **Load**: autocannon, no pipelining, on the same machine as the servers: the load generator, Postgres, Redis and the server under test share the ${cpu.length} cores, so a ratio is the service's cost on a machine where everything competes, and the CPU columns (the server process's own CPU time per request) show the service's cost alone`);
  out(`- **Against the ceiling**: at ${r.settings.concurrencies.join(', ')} connections, ${r.settings.rounds} interleaved rounds of ${r.settings.seconds} s per arm (order rotated each round) after a ${r.settings.warmupSeconds} s warm-up; the other throughput arms at ${r.settings.connections} connections, ${Math.min(r.settings.rounds, 3)} rounds; latency: ${r.settings.latencyRounds} rounds of ${r.settings.latencySeconds} s at a fixed ${r.latencyRate} req/s (60% of the slowest arm's maximum)`);
  out('- **Servers**: each in a process of its own, compiled (`node dist/…` after `npm run build`, as `npm start` runs the service), with `NODE_ENV=production`; the service at its default log level (info: a line per request, to /dev/null here)');
  out(`- **Data**: ${r.pets.toLocaleString('en')} pets for the throughput arms; ${r.scale.pets.toLocaleString('en')} pets for the scale arms (seeded with generate_series in ${fmt(r.scale.seedSeconds, 1)} s)`);
  out(`- Run time ${fmt(r.durationSeconds, 0)} s. An arm with any unexpected status, error or timeout is invalid and gives no result.`);
  out();
  out('## Ratios (same run)');
  out();
  out('Each ratio is the median of the per-round ratios; the range is the lowest and highest round. In the ceiling comparisons the two arms of a ratio run one after the other (or two apart), in the order A B one round and B A the next, so that the machine\'s drift falls on both; elsewhere the order rotates and the two arms of a round ran minutes apart at most. "server CPU" rows compare the server process\'s own CPU time per request (user + system, from /proc), which the load generator and Postgres do not share.');
  out();
  out('| comparison | ratio | rounds | target | met |');
  out('|---|---:|---|---|---|');
  for (const c of checks) out(`| ${c.what} | ${c.ratio === undefined ? '—' : fmt(c.ratio)} | ${c.range} | ${c.target} | ${c.met === undefined ? '' : c.met ? 'yes' : '**no**'} |`);
  out(`| database transactions per listPets request with a known key | ${rt.invalid ? '—' : fmt(rt.perRequest)} | ${rt.transactions} / ${rt.requests} requests | 1.00 (no key lookup) | ${rt.invalid ? 'invalid' : rtMet ? 'yes' : '**no**'} |`);
  out();
  out('## Against the ceiling');
  out();
  out('Bare Fastify running the same SQL through a plain pg.Pool (the ceiling), the service as shipped (`LOG_LEVEL=info`, metrics on), at `LOG_LEVEL=warn`, with `METRICS=false`, and listPets with traces on. Server CPU and bytes allocated (on the JS heap, from V8\'s GC records: `bench/allocationMeter.mjs`) per request: median (lowest–highest round).');
  out();
  for (const c of r.settings.concurrencies) {
    out(`### ${c} connections`);
    out();
    out('| arm | req/s (median) | rounds | p50 ms | p99 ms | server CPU µs/request | KB allocated/request | valid |');
    out('|---|---:|---|---:|---:|---:|---:|---|');
    for (const [name, ms] of r.ceiling[c]!) out(ceilingRow(name, ms));
    out();
  }
  out('## Where the difference goes');
  out();
  out('listPets (limit 20) at 32 connections, the service as shipped and the ceiling each profiled (`node --cpu-prof`) for the same load, after a warm-up. Each profile sample is charged to the innermost frame of its stack that belongs to a cost (a statement sent from a handler is the database client\'s; the `JSON.stringify` inside Fastify\'s serializer is serialization), µs of busy time per request. Profiled wall time in a busy process, not CPU: a sample taken while the process waits for a core counts where it waits (often `writev`), so compare the rows, not the totals with the CPU columns above.');
  out();
  out('| cost | service µs/request | ceiling µs/request | difference |');
  out('|---|---:|---:|---:|');
  let totals = [0, 0];
  for (const d of r.decomposition) {
    totals = [totals[0]! + d.service, totals[1]! + d.ceiling];
    out(`| ${d.cost} | ${fmt(d.service, 1)} | ${fmt(d.ceiling, 1)} | ${fmt(d.service - d.ceiling, 1)} |`);
  }
  out(`| **total** | ${fmt(totals[0]!, 1)} | ${fmt(totals[1]!, 1)} | ${fmt(totals[0]! - totals[1]!, 1)} |`);
  out();
  out('## /metrics after the runs above');
  out();
  out('An excerpt of what `curl /metrics` answered the service after the ceiling runs (buckets of one series only):');
  out();
  out('```');
  out(r.metricsExcerpt);
  out('```');
  out();
  out('## Throughput (maximum)');
  out();
  out('| arm | req/s (median) | p50 ms | p99 ms | valid |');
  out('|---|---:|---:|---:|---|');
  for (const [name, ms] of T) out(row(name, ms, 'rps'));
  out();
  out(`## Latency at ${r.latencyRate} req/s`);
  out();
  out('| arm | req/s | p50 ms | p99 ms | valid |');
  out('|---|---:|---:|---:|---|');
  for (const [name, ms] of L) out(row(name, ms, 'rps'));
  out();
  out('## Unknown keys');
  out();
  out(`getPet with a known key at ${r.latencyRate} req/s on a service with the default anonymous limits (60 a minute per address), while a second client process sends the same rate of requests from the same address with a new random key each, against the same with no key at all. A key nobody issued is refused from the index of issued keys (src/auth/keyIndex.ts) without a database lookup.`);
  out();
  out('| flood | p50 ms | p99 ms | valid |');
  out('|---|---:|---:|---|');
  for (const [name, ms] of burst) out(`| ${name} | ${fmt(median(ms.map((m) => m.p50)), 1)} | ${fmt(median(ms.map((m) => m.p99)), 1)} | ${invalidOf(ms) ?? 'yes'} |`);
  out();
  out(`## Scale: ${r.scale.pets.toLocaleString('en')} pets`);
  out();
  out(`listPets (limit 20) at ${r.latencyRate} req/s, first page against a page deep in the cursor chain.`);
  out();
  out('| page | req/s | p50 ms | p99 ms | valid |');
  out('|---|---:|---:|---:|---|');
  for (const [name, ms] of S) out(row(name, ms, 'rps'));
  out();
  out('The query plans, deep in the table (`EXPLAIN ANALYZE`):');
  out();
  for (const p of planChecks) {
    out(`\`${p.sql}\`: ${p.ok ? 'an index range scan, no sort' : '**not an index range scan**'}`);
    out();
    out('```');
    out(p.plan);
    out('```');
    out();
  }
  out('## Creates: the ceiling of the id-order lock');
  out();
  out('Creates commit one at a time across every instance: each takes a transaction-level advisory lock before its id is drawn and holds it to its commit, so that a reader following `Link` cursors never misses a pet committed late with a lower id (`src/pets/sql.ts`). What that allows all instances together, creating straight to Postgres with 10 connections per instance (`npm run bench:creates`, no HTTP): the figure does not grow with instances, it is one per database. Keyed creates (`Idempotency-Key`, `src/idempotency/idempotent.ts`) hold the lock from the insert across the saved response and the commit.');
  out();
  out(r.createCeiling);
  out();
  out('## Response serialization');
  out();
  out('A listPets page of 20 pets, in this process (`bench/serializers.ts`), medians of paired rounds. The API writes bodies with JSON.stringify (`src/api/plugin.ts`): fast-json-stringify, which Fastify compiles from the response schema by default, is faster per page but allocates several times more, and allocation per request is what the service had most in excess of the ceiling. Repositories return exactly the document\'s fields, and the tests validate every response against the document.');
  out();
  out('| serializer | ns per page | bytes allocated per page |');
  out('|---|---:|---:|');
  for (const x of r.serializers) out(`| ${x.name} | ${fmt(x.ns, 0)} | ${fmt(x.bytes, 0)} |`);
  out();
  out('## Log writers');
  out();
  out('What one request line costs through each way pino can write it (`npm run bench:logs`: whole-process CPU per line, the lines written to a file). The service uses the first: `src/logging/batchedLines.ts`.');
  out();
  out('```');
  out(r.logWriters);
  out('```');
  out();
  out('## The index of issued API keys');
  out();
  out(`Each instance keeps a 52-bit prefix of every issued key\'s hash in memory (\`src/auth/keyIndex.ts\`), so that a key nobody issued is refused without a database lookup: ${r.keyIndex.keys.toLocaleString('en')} keys take ${fmt(r.keyIndex.bytes / 2 ** 20, 1)} MiB of heap (${fmt(r.keyIndex.bytesPerKey, 0)} bytes a key; \`bench/keyIndexMemory.ts\`).`);
  out();
  out(renderPgliteBreakdown(r.pglite));
  out();
  out('## Peak memory');
  out();
  out('| server | peak RSS (VmHWM) |');
  out('|---|---:|');
  for (const [name, mib] of Object.entries(r.peakRss)) out(`| ${name} | ${fmt(mib, 0)} MiB |`);
  out();
  out('## What the arms are');
  out();
  out('- **service**: `src/server.ts` (run as `dist/src/server.js`) as shipped (default settings: pool of 10, log level info, metrics on), on Postgres, with an enterprise key whose quota is never reached, so every request is authenticated (from the key cache), counted by the limiter, validated, logged and recorded in the metrics.');
  out('- **service at warn**: the same with `LOG_LEVEL=warn`: no request line.');
  out('- **service+Redis**: the same with `REDIS_URL`: the limiter script runs in Redis; a key this far from its limits reserves up to 100 requests per round trip (`RATE_LIMIT_REDIS_BATCH`).');
  out('- **service+Redis batch 1**: the same with `RATE_LIMIT_REDIS_BATCH=1`: a Redis round trip for every request, as before batching.');
  out('- **service 2 workers**: `WORKERS=2` (node:cluster, one port), each with a pool of 5 and the Redis limiter, so the quota holds across workers; on this 2-core machine they share the cores with Postgres, Redis and autocannon.');
  out('- **service on PGlite**: the same on the embedded database (no `DATABASE_URL`).');
  out('- **service with 1 connection**: on Postgres with `DB_POOL_MAX=1`, the one connection the embedded store allows: what of PGlite\'s cost is the single connection rather than WASM.');
  out('- **service without metrics**: `METRICS=false`: no /metrics, no per-request counting, no query timing.');
  out('- **service with traces**: `OTEL_EXPORTER_OTLP_ENDPOINT` set: a span per request and per SQL statement (here 2: the key is cached), batched and sent as OTLP/HTTP JSON to a sink, `bench/bareServer.ts` in a process of its own answering 200 to everything.');
  out('- **Fastify**: `bench/baselineServer.ts`, the ceiling: bare Fastify running the service\'s own SQL (src/pets/sql.ts) through a plain pg.Pool, with nothing else of the service.');
  out('- **node:http**: `bench/bareServer.ts`, the floor of HTTP on Node: a constant 20-pet array.');
  out('- **placeOrder, listOrders**: a database of their own with 300,000 available pets, each placeOrder taking the next one (service and ceiling alike), and 1,000 placed orders of the benchmark\'s key to list; the ceiling runs `src/orders/sql.ts` for that key.');
  out();
  return { markdown: lines.join('\n'), failures };
}

function ceilingRow(name: string, ms: Measurement[]): string {
  const invalid = invalidOf(ms);
  if (invalid) return `| ${name} | — | — | — | — | — | — | **invalid**: ${invalid} |`;
  const rps = ms.map((m) => m.rps);
  const cpu = ms.map((m) => m.cpuMicros ?? NaN);
  const kb = ms.map((m) => (m.allocBytes ?? NaN) / 1024);
  const spread = (xs: number[], digits: number) => `${fmt(median(xs), digits)} (${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)})`;
  return `| ${name} | ${fmt(median(rps), 0)} | ${fmt(Math.min(...rps), 0)}–${fmt(Math.max(...rps), 0)} | ${fmt(median(ms.map((m) => m.p50)), 1)} | ${fmt(median(ms.map((m) => m.p99)), 1)} | ${spread(cpu, 0)} | ${spread(kb, 1)} | yes |`;
}

function row(name: string, ms: Measurement[], _field: 'rps'): string {
  const invalid = invalidOf(ms);
  if (invalid) return `| ${name} | — | — | — | **invalid**: ${invalid} |`;
  return `| ${name} | ${fmt(median(ms.map((m) => m.rps)), 0)} | ${fmt(median(ms.map((m) => m.p50)), 1)} | ${fmt(median(ms.map((m) => m.p99)), 1)} | yes |`;
}
