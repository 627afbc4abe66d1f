import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { runScript, startServer } from '../helpers/processes.js';
import { manualClock } from '../helpers/clock.js';
import { logCollector } from '../helpers/logCollector.js';
import { startTestServer } from '../helpers/testServer.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/** The server's own log output, as an operator would collect it from stdout. */
describe('request logs', () => {
  let db: TestDatabase;
  let lines: Array<Record<string, any>>;
  let key: string;
  let keyId: number;
  const badKey = `as_${'B'.repeat(43)}`;
  const ids: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'info' });
    let stdout = '';
    server.child.stdout!.on('data', (c: Buffer) => (stdout += c.toString())); // from the start: it waited in the pipe
    const base = server.baseUrl;
    key = await createKey(db.env, { plan: 'business' });
    // The operator's view of the key: `npm run apikey -- list` prints its id first.
    const listed = await runScript('scripts/apikey.ts', ['list'], db.env);
    keyId = Number(listed.stdout.trim().split('\n').at(-1)!.split('\t')[0]);
    const requests: Array<[string, RequestInit]> = [
      ['/v1/pets', { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'trace-ok' } }],
      ['/v1/pets', { headers: { authorization: `Bearer ${badKey}`, 'x-request-id': 'trace-bad-key' } }],
      ['/v1/pets', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name":1}' }],
      ['/v1/pets/1', { headers: { authorization: key } }],
    ];
    for (const [path, init] of requests) {
      const res = await fetch(`${base}${path}`, init);
      await res.arrayBuffer();
      ids.push(res.headers.get('x-request-id')!);
    }
    await server.stop();
    lines = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
  }, 60_000);
  afterAll(() => db.drop());

  it('writes one line per request: id, operation, status, duration, client, key id, plan and rate-limit outcome', () => {
    const requestLines = lines.filter((l) => l.msg === 'request');
    const fields = ({ reqId, op, method, url, status, ip, plan, rateLimit }: Record<string, any>) => ({ reqId, op, method, url, status, ip, plan, rateLimit });
    const anonymous = { ip: '127.0.0.1', plan: 'anonymous', rateLimit: 'allowed' };
    const business = { ip: '127.0.0.1', plan: 'business', rateLimit: 'allowed' };
    expect(requestLines.map(fields)).toEqual([
      { reqId: 'trace-ok', op: 'listPets', method: 'GET', url: '/v1/pets', status: 200, ...business },
      { reqId: 'trace-bad-key', op: 'listPets', method: 'GET', url: '/v1/pets', status: 401, ...anonymous },
      { reqId: ids[2], op: 'createPet', method: 'POST', url: '/v1/pets', status: 400, ...business },
      { reqId: ids[3], op: 'getPet', method: 'GET', url: '/v1/pets/1', status: 401, ...anonymous },
    ]);
    // The key's id, never the key; none for the requests without a valid one.
    expect(requestLines.map((l) => l.keyId)).toEqual([keyId, undefined, keyId, undefined]);
    for (const l of requestLines) expect(l.ms).toBeGreaterThan(0);
    // Debug fields only at debug level.
    for (const l of requestLines) expect(l.limiter).toBeUndefined();
  });

  it('never writes a key, valid or not, in any form', () => {
    const text = JSON.stringify(lines);
    expect(lines.length).toBeGreaterThan(4);
    expect(text).not.toContain(key);
    expect(text).not.toContain(key.slice(3));
    expect(text).not.toContain(badKey.slice(3));
    expect(text).not.toMatch(/authorization/i);
  });

  it('puts the request id on every line written while serving a request', () => {
    const duringRequests = lines.filter((l) => 'req' in l || 'res' in l || 'status' in l || 'err' in l);
    for (const l of duringRequests) expect(ids).toContain(l.reqId);
  });
});

describe('request logs at debug level', () => {
  it("add the limiter's decision", async () => {
    const { stream, lines } = logCollector();
    const server = await startTestServer({ LOG_LEVEL: 'debug' }, { logStream: stream, clock: manualClock().now });
    try {
      const key = await server.createKey('enterprise', { perMinute: 50, perDay: 500 });
      expect((await server.request('/v1/pets?limit=2', { key })).status).toBe(200);
      expect((await server.request('/v1/pets/1', { key })).status).toBe(404);
    } finally {
      await server.close();
    }
    const requestLines = lines.filter((l) => l.msg === 'request');
    expect(requestLines.map((l) => [l.op, l.limiter])).toEqual([
      ['listPets', { remaining: 49, limit: 50, mode: 'local' }],
      ['getPet', { remaining: 48, limit: 50, mode: 'local' }],
    ]);
    expect(requestLines.map((l) => l.reqId)).toEqual([expect.any(String), expect.any(String)]);
  });
});
