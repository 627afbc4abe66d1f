import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { hashApiKey } from '../../src/auth/apiKey.js';
import { manualClock } from '../helpers/clock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { decodeSpans, SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startCollector, type Collector, type ExportedSpan } from './collector.js';

/** A create whose body arrives 100 ms after its headers: read in the connection's callbacks, not the request's. */
function postWithLateBody(url: string, key: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.flushHeaders();
    setTimeout(() => req.end(body), 100);
  });
}

const serverSpans = (spans: ExportedSpan[]) => spans.filter((s) => s.kind === SPAN_KIND_SERVER);
const childrenOf = (spans: ExportedSpan[], parent: ExportedSpan) => spans.filter((s) => s.parentSpanId === parent.spanId);

describe('traces, with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';
  const CALLER_SPAN = 'b7ad6b7169203331';
  const petName = `Traced-${process.pid}-${Date.now()}`;
  let collector: Collector;
  let server: TestServer;
  let spans: ExportedSpan[];
  let database: { address: string | undefined; port: number | undefined };

  beforeAll(async () => {
    collector = await startCollector();
    // Batches would leave every 5 s: pushed back, so that only closing the app can send them.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '600000';
    // The clock stands still: the key, looked up by the first request, stays cached for the others.
    server = await startTestServer({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }, { clock: manualClock().now });
    const options = server.app.database.pool.options as { connectionString?: string; host?: string; port?: number };
    const url = options.connectionString ? new URL(options.connectionString) : undefined;
    // A Unix socket (the embedded PostgreSQL) is named by its folder, in the URL's `host` parameter.
    database = url ? { address: url.searchParams.get('host') ?? url.hostname, port: Number(url.port || 5432) } : { address: options.host, port: options.port };

    expect((await server.request('/v1/pets?limit=2')).status).toBe(200);
    expect((await server.request('/v1/pets/999999')).status).toBe(404);
    expect(await postWithLateBody(`${server.baseUrl}/v1/pets`, server.key, JSON.stringify({ name: petName, categoryId: 1 }))).toBe(201);
    const traced = await server.request('/v1/pets?limit=2', { headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } });
    expect(traced.status).toBe(200);
    // Nothing sent yet: closing the app must flush what is batched.
    expect(collector.received).toEqual([]);
    await server.close();
    spans = collector.received.flatMap((r) => decodeSpans(r.body));
  });
  afterAll(async () => {
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    await collector?.close();
  });

  it('sends OTLP/HTTP JSON to <endpoint>/v1/traces, as the service named by default', () => {
    expect(collector.received.length).toBeGreaterThan(0);
    for (const r of collector.received) expect([r.method, r.path, r.contentType]).toEqual(['POST', '/v1/traces', 'application/json']);
    expect(new Set(spans.map((s) => s.resource['service.name']))).toEqual(new Set(['animal-store']));
  });

  it('has one server span per request, with its route, operation, path and status', () => {
    const requests = serverSpans(spans).map((s) => ({
      name: s.name,
      operation: s.attributes['animal_store.operation'],
      method: s.attributes['http.request.method'],
      route: s.attributes['http.route'],
      path: s.attributes['url.path'],
      status: s.attributes['http.response.status_code'],
    }));
    expect(requests).toEqual([
      { name: 'GET /v1/pets', operation: 'listPets', method: 'GET', route: '/v1/pets', path: '/v1/pets', status: 200 },
      { name: 'GET /v1/pets/:petId', operation: 'getPet', method: 'GET', route: '/v1/pets/:petId', path: '/v1/pets/999999', status: 404 },
      { name: 'POST /v1/pets', operation: 'createPet', method: 'POST', route: '/v1/pets', path: '/v1/pets', status: 201 },
      { name: 'GET /v1/pets', operation: 'listPets', method: 'GET', route: '/v1/pets', path: '/v1/pets', status: 200 },
    ]);
  });

  it('starts a trace per request, or continues the caller\'s (traceparent)', () => {
    const [list, get, create, continued] = serverSpans(spans) as [ExportedSpan, ExportedSpan, ExportedSpan, ExportedSpan];
    expect(new Set([list.traceId, get.traceId, create.traceId, continued.traceId]).size).toBe(4);
    for (const s of [list, get, create]) expect(s.parentSpanId).toBeUndefined();
    expect([continued.traceId, continued.parentSpanId]).toEqual([CALLER_TRACE, CALLER_SPAN]);
  });

  it('has a client span per SQL statement, under its request\'s span, with the stable database attributes', () => {
    const [list, get, create, continued] = serverSpans(spans) as [ExportedSpan, ExportedSpan, ExportedSpan, ExportedSpan];
    const statements = (request: ExportedSpan) =>
      childrenOf(spans, request).map((s) => {
        expect(s.kind).toBe(SPAN_KIND_CLIENT);
        expect(s.traceId).toBe(request.traceId);
        expect(s.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'server.address': database.address, 'server.port': database.port });
        // instrumentation-pg names a span `pg.query:<first keyword> <database>`.
        return [/^pg\.query:(\w+) /.exec(s.name)?.[1], String(s.attributes['db.query.text']).replace(/\s+/g, ' ')];
      });
    // The first request looks its key up (then cached); the others only run their own statement.
    expect(statements(list)).toEqual([
      ['SELECT', expect.stringMatching(/^SELECT k\.id, k\.account_id .* FROM api_keys k JOIN accounts a .* WHERE k\.key_hash = \$1 /)],
      ['SELECT', expect.stringMatching(/^SELECT id, name, category_id .* FROM pets WHERE id > \$1 AND deleted_at IS NULL ORDER BY id LIMIT \$2$/)],
    ]);
    expect(statements(get)).toEqual([['SELECT', expect.stringMatching(/ FROM pets WHERE id = \$1 AND deleted_at IS NULL$/)]]);
    // The pet, its event and its delivery intents in one call, its own transaction (migration 018).
    expect(statements(create)).toEqual([['SELECT', 'SELECT create_pet($1, $2, $3, $4, $5) AS r']]);
    expect(statements(continued)).toEqual([['SELECT', expect.stringMatching(/ FROM pets WHERE id > \$1 AND deleted_at IS NULL ORDER BY id LIMIT \$2$/)]]);
    // Nothing else: the statements of start-up and of creating the test's key, outside any request, are not traced.
    expect(spans.length).toBe(4 + 2 + 1 + 1 + 1);
  });

  it('never exports a key, an Authorization header or a statement\'s parameters', () => {
    const payload = collector.received.map((r) => r.body).join('\n');
    for (const secret of [server.key, hashApiKey(server.key), petName]) expect(payload).not.toContain(secret);
    expect(payload.toLowerCase()).not.toContain('authorization');
    expect(payload.toLowerCase()).not.toContain('bearer');
    for (const s of spans.filter((x) => x.kind === SPAN_KIND_CLIENT)) expect(String(s.attributes['db.query.text'])).not.toContain('999999');
  });
});

describe('traces, without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('loads nothing of tracing in the app', async () => {
    const server = await startTestServer({}, { clock: manualClock().now });
    try {
      expect((await server.request('/v1/pets?limit=2')).status).toBe(200);
      expect(server.app.hasPlugin('@fastify/otel')).toBe(false);
    } finally {
      await server.close();
    }
  });

  /**
   * src/server.ts as `npm start` runs it (no loader flag), with every ESM import recorded: without
   * the variable, no OpenTelemetry module is imported; with it, the same recording shows them,
   * and the spans (SQL included) reach the collector when SIGTERM closes the server.
   */
  describe('src/server.ts in a process of its own', () => {
    const databases: TestDatabase[] = [];
    let collector: Collector;
    let dir: string;

    beforeAll(async () => {
      collector = await startCollector();
      dir = await scratchDir('as-imports-');
    });
    afterAll(async () => {
      await collector?.close();
      for (const db of databases) await db.drop();
    });

    /** Starts the server, sends a listPets with a key it has not seen (a key lookup, then the list), stops it; what it imported. */
    async function run(name: string, env: Record<string, string>): Promise<string[]> {
      const db = await createTestDatabase();
      databases.push(db);
      const key = await createKey(db.env, { plan: 'free' });
      const log = path.join(dir, `${name}.log`);
      const child = await startServer('src/server.ts', { ...db.env, ...env, IMPORT_LOG: log }, { stdout: 'ignore', nodeArgs: ['--import', './test/tracing/recordImports.mjs'] });
      try {
        const res = await fetch(`${child.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      } finally {
        expect(await child.stop()).toBe(0);
      }
      return (await readFile(log, 'utf8')).split('\n');
    }
    // pg-boss imports @opentelemetry/api (inert without an SDK, ~no cost); tracing off must load none of the rest.
    const otelModules = (urls: string[]) =>
      urls.filter((u) => /\/node_modules\/(@opentelemetry|@fastify\/otel)\/|\/src\/tracing\/otel\.ts$/.test(u) && !u.includes('/node_modules/@opentelemetry/api/'));

    it('off: imports the tracing plugin but nothing of OpenTelemetry', async () => {
      const urls = await run('off', {});
      // The recording saw the app's own modules (the plugin that would load the rest) and its packages.
      expect(urls.some((u) => u.endsWith('/src/tracing/plugin.ts'))).toBe(true);
      expect(urls.some((u) => u.includes('/node_modules/pg/'))).toBe(true);
      expect(otelModules(urls)).toEqual([]);
    });

    it('on: the same recording shows OpenTelemetry loaded, and the spans arrive', async () => {
      const urls = await run('on', { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
      const loaded = new Set(otelModules(urls).map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? /\/src\/(tracing\/\w+)\.ts$/.exec(u)![1]));
      for (const module of ['tracing/otel', '@fastify/otel', '@opentelemetry/instrumentation-pg', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/sdk-trace-base']) {
        expect(loaded).toContain(module);
      }
      const spans = collector.received.flatMap((r) => decodeSpans(r.body));
      const [list, ...others] = serverSpans(spans).filter((s) => s.attributes['animal_store.operation'] === 'listPets');
      expect(others).toEqual([]);
      expect(list!.attributes['http.response.status_code']).toBe(200);
      // pg was loaded before tracing started, without a loader hook: its statements are traced all the same.
      expect(childrenOf(spans, list!).map((s) => s.attributes['db.query.text'])).toEqual([expect.stringMatching(/ api_keys /), expect.stringMatching(/ FROM pets /)]);
    });
  });
});
