import { Counter } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enumValues, loadDocument } from '../../src/openapi/document.js';
import { manualClock } from '../helpers/clock.js';
import { parsePrometheus, sampleValue, type Sample } from '../helpers/prometheus.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const DURATION = 'animal_store_http_request_duration_seconds_count';
const DECISIONS = 'animal_store_rate_limit_decisions_total';

/** A scrape of the server's metrics listener (METRICS_PORT, apart from the API's port). */
async function scrape(server: TestServer, headers: Record<string, string> = {}): Promise<{ status: number; samples: Sample[]; text: string; type: string | null }> {
  const res = await fetch(server.app.metricsUrl!, { headers });
  const text = await res.text();
  return { status: res.status, text, type: res.headers.get('content-type'), samples: res.ok ? parsePrometheus(text) : [] };
}

describe('/metrics after known traffic', () => {
  const clock = manualClock();
  let server: TestServer;
  let samples: Sample[];
  const codes: Record<string, number> = {};

  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_BAN_AFTER: '1', RATE_LIMIT_BAN_GRACE_SECONDS: '0' }, { clock: clock.now });
    for (let i = 0; i < 3; i++) expect((await server.request('/v1/pets?limit=2')).status).toBe(200);
    expect((await server.request('/v1/pets', { key: null })).status).toBe(401);
    const create = { method: 'POST' as const, body: { name: 'Metrics', categoryId: 1 }, headers: { 'idempotency-key': 'metrics-1' } };
    expect((await server.request('/v1/pets', create)).status).toBe(201);
    const replay = await server.request('/v1/pets', create);
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect((await server.request('/v1/pets/999999')).status).toBe(404);

    // An enterprise key allowed 2 a minute, then refused; more than one refusal (BAN_AFTER=1) starts a ban.
    const limited = await server.createKey('enterprise', { perMinute: 2, perDay: 100 });
    for (let i = 0; i < 6; i++) {
      const res = await server.request('/v1/pets?limit=2', { key: limited });
      const code = res.status === 200 ? 'ok' : (res.body as { code: string }).code;
      codes[code] = (codes[code] ?? 0) + 1;
    }
    // One request by a key of each other plan the document lists (a listEvents, counted by no test above).
    for (const plan of enumValues(loadDocument(), 'Plan').filter((p) => p !== 'business' && p !== 'enterprise')) {
      expect((await server.request('/v1/events', { key: await server.createKey(plan) })).status).toBe(200);
    }
    const scraped = await scrape(server);
    expect(scraped.status).toBe(200);
    samples = scraped.samples;
  });
  afterAll(() => server?.close());

  it('has seen the limiter allow, refuse and ban', () => {
    // What the service answered, which the counters below must match exactly.
    expect(codes).toEqual({ ok: 2, rate_limited: 2, temporarily_banned: 2 });
  });

  it('counts requests by operation and status class', () => {
    expect(sampleValue(samples, DURATION, { operation: 'listPets', status_class: '2xx' })).toBe(3 + 2);
    expect(sampleValue(samples, DURATION, { operation: 'listPets', status_class: '4xx' })).toBe(1 + 4);
    expect(sampleValue(samples, DURATION, { operation: 'createPet', status_class: '2xx' })).toBe(2);
    expect(sampleValue(samples, DURATION, { operation: 'getPet', status_class: '4xx' })).toBe(1);
    expect(sampleValue(samples, DURATION, { operation: 'getPet', status_class: '2xx' })).toBeUndefined();
    // The histogram's buckets add up to its count.
    const inf = sampleValue(samples, 'animal_store_http_request_duration_seconds_bucket', { operation: 'createPet', status_class: '2xx', le: '+Inf' });
    expect(inf).toBe(2);
  });

  it('counts rate-limit decisions by plan and outcome', () => {
    expect(sampleValue(samples, DECISIONS, { plan: 'business', outcome: 'allowed' })).toBe(3 + 2 + 1);
    expect(sampleValue(samples, DECISIONS, { plan: 'anonymous', outcome: 'allowed' })).toBe(1);
    expect(sampleValue(samples, DECISIONS, { plan: 'enterprise', outcome: 'allowed' })).toBe(codes.ok);
    expect(sampleValue(samples, DECISIONS, { plan: 'enterprise', outcome: 'limited' })).toBe(codes.rate_limited);
    expect(sampleValue(samples, DECISIONS, { plan: 'enterprise', outcome: 'banned' })).toBe(codes.temporarily_banned);
    // Each of the document's plans has its series: the keys of the plans not above made one request each.
    expect(samples.filter((s) => s.name === DECISIONS && s.labels.outcome === 'allowed').map((s) => [s.labels.plan, s.value])).toEqual(
      expect.arrayContaining([['free', 1], ['pro', 1]]),
    );
    expect(new Set(samples.filter((s) => s.name === DECISIONS).map((s) => s.labels.plan))).toEqual(new Set([...enumValues(loadDocument(), 'Plan'), 'anonymous']));
    expect(sampleValue(samples, 'animal_store_rate_limit_mode', { mode: 'local' })).toBe(1);
    expect(sampleValue(samples, 'animal_store_rate_limit_mode', { mode: 'shared' })).toBe(0);
  });

  it('counts idempotent replays and pool state', () => {
    expect(sampleValue(samples, 'animal_store_idempotent_replays_total')).toBe(1);
    const total = sampleValue(samples, 'animal_store_db_pool_connections', { state: 'total' })!;
    const idle = sampleValue(samples, 'animal_store_db_pool_connections', { state: 'idle' })!;
    expect(total).toBeGreaterThanOrEqual(1);
    expect(idle).toBeLessThanOrEqual(total);
    expect(sampleValue(samples, 'animal_store_db_pool_waiting')).toBe(0);
  });

  it('includes the process metrics', () => {
    expect(sampleValue(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  });

  it('is not counted against any quota', async () => {
    for (let i = 0; i < 70; i++) expect((await scrape(server)).status).toBe(200);
    // The anonymous quota (60 a minute) has counted the one earlier request without a key, and this one.
    const res = await server.request('/v1/pets', { key: null });
    expect([res.status, res.headers.get('x-ratelimit-remaining')]).toEqual([401, '58']);
  });

  it('is not served on the API\'s public port', async () => {
    const res = await fetch(`${server.baseUrl}/metrics`);
    expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'not_found']);
  });

  it('listens on the loopback interface by default, on a port of its own', () => {
    const url = new URL(server.app.metricsUrl!);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.port).not.toBe(new URL(server.baseUrl).port);
  });

  it('answers anything but GET /metrics with an Error body', async () => {
    const other = await fetch(new URL('/other', server.app.metricsUrl!));
    expect([other.status, ((await other.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    const post = await fetch(server.app.metricsUrl!, { method: 'POST' });
    expect([post.status, post.headers.get('allow'), ((await post.json()) as { code: string }).code]).toEqual([405, 'GET, HEAD', 'method_not_allowed']);
  });

  it('serves a metric another plugin registered in app.metricsRegistry', async () => {
    const counter = new Counter({ name: 'animal_store_test_events_total', help: 'A test counter.', registers: [server.app.metricsRegistry] });
    counter.inc(3);
    expect(sampleValue((await scrape(server)).samples, 'animal_store_test_events_total')).toBe(3);
  });

  it('answers in the Prometheus text format, never cached', async () => {
    const res = await fetch(server.app.metricsUrl!);
    await res.text();
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});

describe('/metrics with METRICS_TOKEN', () => {
  const token = 'metrics-token-0123456789';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ METRICS_TOKEN: token });
  });
  afterAll(() => server?.close());

  it('answers only a scrape that sends the token', async () => {
    const missing = await scrape(server);
    expect([missing.status, JSON.parse(missing.text).code]).toEqual([401, 'unauthorized']);
    expect((await scrape(server, { authorization: `Bearer ${token}x` })).status).toBe(401);
    expect((await scrape(server, { authorization: `Bearer ${server.key}` })).status).toBe(401);
    const ok = await scrape(server, { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(ok.text).not.toContain(token);
  });
});

describe('METRICS=false', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ METRICS: 'false' });
  });
  afterAll(() => server?.close());

  it('opens no metrics listener and serves no /metrics', async () => {
    expect(server.app.metricsUrl).toBeUndefined();
    const res = await fetch(`${server.baseUrl}/metrics`);
    expect(res.status).toBe(404);
  });
});
