import { createHash, randomBytes } from 'node:crypto';
import type pg from 'pg';

/**
 * What the version before accounts (schema up to migration 008) wrote, statement for
 * statement as its CLI and handlers did, kept here so that the test of migration 009 does
 * not depend on today's code: keys were the customer, orders and saved responses the key's.
 */
export const PREVIOUS_SCHEMA = '008_drop_create_pet_keyed.sql';

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const ORDER_COLUMNS = `id, pet_id AS "petId", status, ${iso('created_at')} AS "createdAt", ${iso('updated_at')} AS "updatedAt"`;
const PLACE = `WITH pet AS (
    UPDATE pets SET status = 'pending' WHERE id = $1 AND status = 'available' RETURNING id
  )
  INSERT INTO orders (pet_id, api_key_id)
  SELECT pet.id, $2 FROM pet, (SELECT pg_advisory_xact_lock(727274003, ($2 % 2147483648)::int)) AS in_id_order
  RETURNING ${ORDER_COLUMNS}`;

export interface PreviousOrder {
  id: number;
  petId: number;
  status: string;
  createdAt: string;
  updatedAt: string;
}

/** The previous version's writes on a database migrated up to PREVIOUS_SCHEMA. */
export function previousVersion(pool: pg.Pool) {
  return {
    /** `npm run apikey -- create`: an `as_` key of 256 random bits, stored as its SHA-256. */
    async createKey(opts: { plan: string; name?: string; perMinute?: number; perDay?: number }): Promise<{ id: number; key: string }> {
      const key = `as_${randomBytes(32).toString('base64url')}`;
      const { rows } = await pool.query<{ id: number }>(
        `INSERT INTO api_keys (key_hash, name, plan, per_minute, per_day) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [createHash('sha256').update(key).digest('hex'), opts.name ?? '', opts.plan, opts.perMinute ?? null, opts.perDay ?? null],
      );
      return { id: rows[0]!.id, key };
    },

    /** A request authenticated by the key (its lookup recorded the use). */
    async use(key: string): Promise<void> {
      await pool.query(`UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1 AND revoked_at IS NULL`, [createHash('sha256').update(key).digest('hex')]);
    },

    /** `npm run apikey -- revoke <id>`. */
    async revoke(id: number): Promise<void> {
      await pool.query(`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()), changed_at = now() WHERE id = $1`, [id]);
    },

    /** createPet: pets had no creator. */
    async createPet(name: string): Promise<number> {
      return (await pool.query<{ id: number }>(`INSERT INTO pets (name, category_id, status) VALUES ($1, 1, 'available') RETURNING id`, [name])).rows[0]!.id;
    },

    /** placeOrder by key `keyId`; with an Idempotency-Key, claimed and saved in the order's transaction (hash: requestHash of the body). */
    async placeOrder(keyId: number, petId: number, idempotency?: { key: string; requestHash: string }): Promise<PreviousOrder> {
      if (!idempotency) return (await pool.query<PreviousOrder>(PLACE, [petId, keyId])).rows[0]!;
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const scope = [keyId, 'placeOrder', idempotency.key];
        await client.query(
          `INSERT INTO idempotency_keys (api_key_id, operation, key, request_hash, status, response_body) VALUES ($1, $2, $3, $4, 0, 'null') ON CONFLICT DO NOTHING`,
          [...scope, idempotency.requestHash],
        );
        const order = (await client.query<PreviousOrder>(PLACE, [petId, keyId])).rows[0]!;
        await client.query(`UPDATE idempotency_keys SET status = $4, response_body = $5 WHERE api_key_id = $1 AND operation = $2 AND key = $3`, [
          ...scope,
          201,
          JSON.stringify(order),
        ]);
        await client.query('COMMIT');
        return order;
      } catch (err) {
        await client.query('ROLLBACK');
        throw err;
      } finally {
        client.release();
      }
    },

    /** completeOrder. */
    async completeOrder(keyId: number, orderId: number): Promise<void> {
      await pool.query(
        `WITH changed AS (
           UPDATE orders SET status = 'completed', updated_at = now() WHERE id = $1 AND api_key_id = $2 AND status = 'placed' RETURNING pet_id
         ) UPDATE pets SET status = 'sold' FROM changed WHERE pets.id = changed.pet_id AND pets.status = 'pending'`,
        [orderId, keyId],
      );
    },
  };
}
