import type { TestServer } from './testServer.js';

/** Everything a refused write could have changed, in one row: compare it before and after (test/hostile). */
export async function storedState(server: TestServer): Promise<unknown> {
  const { rows } = await server.app.database.pool.query(`SELECT
    (SELECT json_agg(p ORDER BY id) FROM pets p) AS pets,
    (SELECT json_agg(json_build_array(id, name, scopes, expires_at, revoked_at) ORDER BY id) FROM api_keys) AS keys,
    (SELECT json_agg(json_build_array(id, url, event_types, description, status) ORDER BY id) FROM webhook_endpoints) AS endpoints,
    (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM idempotency_keys) AS keyed`);
  return rows[0];
}
