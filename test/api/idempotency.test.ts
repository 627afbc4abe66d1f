import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const post = (body: unknown, idempotencyKey?: string, key?: string) =>
  server.request('/v1/pets', { body, key, headers: idempotencyKey ? { 'idempotency-key': idempotencyKey } : {} });

describe('Idempotency-Key on POST /v1/pets', () => {
  it('replays the original response for a retry with the same body, creating one pet', async () => {
    const before = await server.petCount();
    const first = await post({ name: 'Rex', categoryId: 7 }, 'retry-1');
    const retry = await post({ categoryId: 7, name: 'Rex' }, 'retry-1'); // same content, other key order
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('location')).toBe(first.headers.get('location'));
    expect(await server.petCount()).toBe(before + 1);
  });

  it('answers 422 for the same key with another body, and stores nothing', async () => {
    await post({ name: 'Tom', categoryId: 1 }, 'retry-2');
    const before = await server.petCount();
    const res = await post({ name: 'Tim', categoryId: 1 }, 'retry-2');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('idempotency_key_reused');
    expect(await server.petCount()).toBe(before);
  });

  it('creates exactly one pet for 20 concurrent identical requests', async () => {
    const before = await server.petCount();
    const results = await Promise.all(Array.from({ length: 20 }, () => post({ name: 'Racer', categoryId: 2 }, 'race-1')));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await server.petCount()).toBe(before + 1);
  });

  it('scopes keys to the API key', async () => {
    const other = await server.createKey('pro');
    const a = await post({ name: 'Same', categoryId: 3 }, 'shared-key');
    const b = await post({ name: 'Same', categoryId: 3 }, 'shared-key', other);
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
  });

  it('creates a new pet per request without the header', async () => {
    const a = await post({ name: 'Dup', categoryId: 3 });
    const b = await post({ name: 'Dup', categoryId: 3 });
    expect(b.body.id).not.toBe(a.body.id);
  });

  it.each(['x'.repeat(256), 'has space'])('rejects the Idempotency-Key %j with 400', async (value) => {
    const before = await server.petCount();
    const res = await post({ name: 'Bad', categoryId: 3 }, value);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/idempotency-key/i);
    expect(await server.petCount()).toBe(before);
  });

  it('records the key in the same transaction as the pet', async () => {
    const res = await post({ name: 'Kept', categoryId: 9 }, 'durable-1');
    const { rows } = await server.app.database.pool.query(
      `SELECT k.status, $1 || '/v1/pets/' || p.id AS location, p.name
         FROM idempotency_keys k JOIN pets p ON (k.response_body->>'id')::bigint = p.id WHERE k.key = 'durable-1'`,
      [server.baseUrl],
    );
    expect(rows).toEqual([{ status: 201, location: res.headers.get('location'), name: 'Kept' }]);
  });
});
