import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteOldIdempotencyKeys } from '../../src/idempotency/retention.js';
import { IDEMPOTENCY_RETENTION_HOURS } from '../../src/limits.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * What is past its retention is deleted, and nothing younger: Idempotency-Keys older than 24 hours
 * with their saved answers. Ages are made by moving created_at back in the database, so no test
 * waits for them.
 */
describe('Idempotency-Key retention (deleteOldIdempotencyKeys)', () => {
  let server: TestServer;
  let key: string;
  const age = (idempotencyKey: string, interval: string) =>
    server.app.database.pool.query(`UPDATE idempotency_keys SET created_at = now() - $2::interval WHERE key = $1`, [idempotencyKey, interval]);

  beforeAll(async () => {
    server = await startTestServer();
    key = await server.createKey('business');
  });
  afterAll(async () => {
    await server?.close();
  });

  it(`deletes Idempotency-Keys older than ${IDEMPOTENCY_RETENTION_HOURS} hours: the same key then makes a new pet; a younger key still replays`, async () => {
    const create = (idempotencyKey: string) => server.request('/v1/pets', { key, body: { name: 'Keyed', categoryId: 1 }, headers: { 'idempotency-key': idempotencyKey } });
    const first = { old: await create('retention-old'), young: await create('retention-young') };
    await age('retention-old', `${IDEMPOTENCY_RETENTION_HOURS} hours 1 minute`);
    await age('retention-young', `${IDEMPOTENCY_RETENTION_HOURS - 1} hours`);

    expect(await deleteOldIdempotencyKeys(server.app.database.pool, new Date())).toBe(1);

    const again = { old: await create('retention-old'), young: await create('retention-young') };
    expect(again.old.status).toBe(201);
    expect(again.old.body.id).not.toBe(first.old.body.id);
    expect(again.old.headers.get('idempotent-replayed')).toBeNull();
    expect(again.young.body.id).toBe(first.young.body.id);
    expect(again.young.headers.get('idempotent-replayed')).toBe('true');
  });
});
