import type pg from 'pg';
import { Gauge, type Registry } from 'prom-client';
import { HORIZON_AGE_SECONDS } from '../pagination/commitOrder.js';

/**
 * `animal_store_tail_horizon_age_seconds`, read from the database when scraped: how long the
 * oldest open transaction holding an xid, anywhere on the Postgres server, has been holding
 * back commit-ordered lists (listEvents): a new event waits at least that long to be listed.
 * `pool` is undefined until the database is open (the metrics plugin is registered first).
 */
export function tailHorizonGauge(registry: Registry, pool: () => pg.Pool | undefined): void {
  new Gauge({
    name: 'animal_store_tail_horizon_age_seconds',
    help: 'Age of the oldest open transaction holding a transaction id on the Postgres server (any database), or prepared transaction: how long it holds back new events in listEvents.',
    registers: [registry],
    async collect() {
      const db = pool();
      if (!db) return;
      this.set((await db.query<{ seconds: number }>(HORIZON_AGE_SECONDS)).rows[0]!.seconds);
    },
  });
}
