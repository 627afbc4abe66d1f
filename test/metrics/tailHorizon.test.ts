import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const GAUGE = 'animal_store_tail_horizon_age_seconds';

describe(`${GAUGE}`, () => {
  let server: TestServer;
  let holder: pg.Client;
  beforeAll(async () => {
    server = await startTestServer();
    // The run's admin database, on the server that holds the test's own: another database, the same transaction ids.
    holder = new pg.Client({ connectionString: inject('template').adminUrl });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await server?.close();
  });

  const gauge = async () => {
    const res = await fetch(server.app.metricsUrl!);
    expect(res.status).toBe(200);
    return sampleValue(parsePrometheus(await res.text()), GAUGE)!;
  };
  /** How long the holder's transaction has been open, by the database's clock (now() is its start). */
  const heldFor = async () => (await holder.query<{ s: number }>('SELECT extract(epoch FROM clock_timestamp() - now())::float8 AS s')).rows[0]!.s;

  it('counts a write transaction held open in another database of the server, and its age grows', async () => {
    expect(await gauge()).toBeGreaterThanOrEqual(0);
    await holder.query('BEGIN');
    try {
      await holder.query('SELECT pg_current_xact_id()'); // takes an xid: every new event now waits for this transaction
      // The gauge is the oldest such transaction's age, so at least this one's, read just before each scrape.
      // (Other transactions on a shared server can only make it larger.)
      const before1 = await heldFor();
      const first = await gauge();
      const before2 = await heldFor();
      const second = await gauge();
      expect(before1).toBeGreaterThan(0);
      expect(first).toBeGreaterThanOrEqual(before1);
      expect(before2).toBeGreaterThan(before1);
      expect(second).toBeGreaterThanOrEqual(before2);
      expect(second).toBeGreaterThan(before1);
    } finally {
      await holder.query('ROLLBACK');
    }
  });

});
