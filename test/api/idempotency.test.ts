import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** POST /v1/pets through the typed client, with an Idempotency-Key when given, as `key` (the server's own key by default). */
const post = (body: components['schemas']['NewPet'], idempotencyKey?: string, key?: string) =>
  server.api.POST('/pets', {
    body,
    params: { header: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {} },
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });

describe('Idempotency-Key on POST /v1/pets', () => {
  it('replays the original response for a retry with the same body, creating one pet', async () => {
    const before = await server.petCount();
    const first = await post({ name: 'Rex', categoryId: 7 }, 'retry-1');
    const retry = await post({ categoryId: 7, name: 'Rex' }, 'retry-1'); // same content, other key order
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.response.status).toBe(201);
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.data).toEqual(first.data);
    expect(retry.response.headers.get('location')).toBe(first.response.headers.get('location'));
    expect(await server.petCount()).toBe(before + 1);
  });

  it('answers 422 for the same key with another body, and stores nothing', async () => {
    await post({ name: 'Tom', categoryId: 1 }, 'retry-2');
    const before = await server.petCount();
    const { response, error } = await post({ name: 'Tim', categoryId: 1 }, 'retry-2');
    expect(response.status).toBe(422);
    expect(error).toEqual({ code: 'idempotency_key_reused', message: 'This Idempotency-Key was used with a different request body.', status: 422 });
    expect(await server.petCount()).toBe(before);
  });

  it('creates exactly one pet for 20 concurrent identical requests', async () => {
    const before = await server.petCount();
    const results = await Promise.all(Array.from({ length: 20 }, () => post({ name: 'Racer', categoryId: 2 }, 'race-1')));
    expect(results.map((r) => r.response.status)).toEqual(Array(20).fill(201));
    expect(new Set(results.map((r) => r.data!.id)).size).toBe(1);
    expect(results.filter((r) => r.response.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await server.petCount()).toBe(before + 1);
  });

  it('scopes keys to the API key', async () => {
    const other = await server.createKey('pro');
    const a = await post({ name: 'Same', categoryId: 3 }, 'shared-key');
    const b = await post({ name: 'Same', categoryId: 3 }, 'shared-key', other);
    expect(b.response.status).toBe(201);
    expect(b.response.headers.get('idempotent-replayed')).toBeNull();
    expect(b.data!.id).not.toBe(a.data!.id);
  });

  it('creates a new pet per request without the header', async () => {
    const a = await post({ name: 'Dup', categoryId: 3 });
    const b = await post({ name: 'Dup', categoryId: 3 });
    expect(b.data!.id).not.toBe(a.data!.id);
  });

  it.each(['x'.repeat(256), 'has space'])('rejects the Idempotency-Key %j with 400', async (value) => {
    const before = await server.petCount();
    // Raw: a value outside the schema's Idempotency-Key (1 to 255 visible ASCII characters).
    const res = await server.request('/v1/pets', { body: { name: 'Bad', categoryId: 3 }, headers: { 'idempotency-key': value } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/idempotency-key/i);
    expect(await server.petCount()).toBe(before);
  });

  it('records the key in the same transaction as the pet', async () => {
    const { response } = await post({ name: 'Kept', categoryId: 9 }, 'durable-1');
    const { rows } = await server.app.database.pool.query(
      `SELECT k.status, $1 || '/v1/pets/' || p.id AS location, p.name
         FROM idempotency_keys k JOIN pets p ON (k.response_body->>'id')::bigint = p.id WHERE k.key = 'durable-1'`,
      [server.baseUrl],
    );
    expect(rows).toEqual([{ status: 201, location: response.headers.get('location'), name: 'Kept' }]);
  });
});
