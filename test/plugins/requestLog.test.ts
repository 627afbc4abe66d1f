import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../scripts/lib/apiKeys.js';
import { startServer } from '../../scripts/lib/processes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/** The server's own log output, as an operator would collect it from stdout. */
describe('request logs', () => {
  let db: TestDatabase;
  let lines: Array<Record<string, any>>;
  let key: string;
  const badKey = `as_${'B'.repeat(43)}`;
  const ids: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'info' });
    let stdout = '';
    server.child.stdout!.on('data', (c: Buffer) => (stdout += c.toString())); // from the start: it waited in the pipe
    const base = server.baseUrl;
    key = await createKey(db.env, { plan: 'business' });
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

  it('writes one line per request, with its id, method, URL, status and duration', () => {
    const requestLines = lines.filter((l) => l.msg === 'request');
    expect(requestLines.map((l) => [l.reqId, l.statusCode])).toEqual([
      ['trace-ok', 200],
      ['trace-bad-key', 401],
      [ids[2], 400],
      [ids[3], 401],
    ]);
    for (const l of requestLines) expect(typeof l.ms).toBe('number');
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
    const duringRequests = lines.filter((l) => 'req' in l || 'res' in l || 'statusCode' in l || 'err' in l);
    for (const l of duringRequests) expect(ids).toContain(l.reqId);
  });
});
