import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { withTransaction } from '../db/transaction.js';
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT } from '../limits.js';
import { newWebhookSecret, type SecretBox } from './secrets.js';
import { isoTimestamp } from '../db/isoTimestamp.js';
import { pageOf } from '../pagination/keysetPage.js';

export type WebhookEndpoint = components['schemas']['WebhookEndpoint'];
export type WebhookEndpointWithSecret = components['schemas']['WebhookEndpointWithSecret'];
export type NewWebhookEndpoint = components['schemas']['NewWebhookEndpoint'];
export type WebhookEndpointPatch = components['schemas']['WebhookEndpointPatch'];
export type WebhookDelivery = components['schemas']['WebhookDelivery'];

const COLUMNS = `id, url, event_types AS "eventTypes", description, status, disabled_reason AS "disabledReason", ${isoTimestamp('created_at')} AS "createdAt"`;
const DELIVERY_COLUMNS = `id, 'evt_' || event_id AS "eventId", attempt, response_status AS "responseStatus", duration_ms AS "durationMs", error, ${isoTimestamp('created_at')} AS "createdAt"`;

/** Why a change was refused; the handlers answer with the matching error. */
export class EndpointChangeRefused extends Error {
  constructor(readonly reason: 'too_many_webhook_endpoints') {
    super(reason);
  }
}

/** An account's webhook endpoints and their delivery log; secrets are sealed (secrets.ts) before they are stored. */
export function webhooksRepository(pool: pg.Pool, box: SecretBox) {
  return {
    async create(accountId: number, input: NewWebhookEndpoint): Promise<WebhookEndpointWithSecret> {
      const secret = newWebhookSecret();
      const endpoint = await withTransaction(pool, async (client) => {
        // The account's row orders concurrent creates, so the count below holds until commit.
        await client.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
        const count = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE account_id = $1', [accountId])).rows[0]!.n;
        if (count >= MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT) throw new EndpointChangeRefused('too_many_webhook_endpoints');
        const { rows } = await client.query<WebhookEndpoint>(
          `INSERT INTO webhook_endpoints (account_id, url, event_types, description, secret) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
          [accountId, input.url, input.eventTypes, input.description ?? '', box.seal(secret)],
        );
        return rows[0]!;
      });
      return { ...endpoint, secret };
    },

    async list(accountId: number, opts: { limit: number; afterId?: number }): Promise<{ rows: WebhookEndpoint[]; hasMore: boolean }> {
      const { rows } = await pool.query<WebhookEndpoint>(
        `SELECT ${COLUMNS} FROM webhook_endpoints WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
        [accountId, opts.afterId ?? 0, opts.limit + 1],
      );
      return pageOf(rows, opts.limit);
    },

    async get(accountId: number, id: number): Promise<WebhookEndpoint | undefined> {
      return (await pool.query<WebhookEndpoint>(`SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2`, [id, accountId])).rows[0];
    },

    /** A merge patch; enabling clears the reason and the failure clock, disabling by hand says so. */
    async update(accountId: number, id: number, patch: WebhookEndpointPatch): Promise<WebhookEndpoint | undefined> {
      const { rows } = await pool.query<WebhookEndpoint>(
        `UPDATE webhook_endpoints SET url = coalesce($3, url), event_types = coalesce($4, event_types), description = coalesce($5, description),
                status = coalesce($6, status),
                disabled_reason = CASE $6 WHEN 'enabled' THEN NULL WHEN 'disabled' THEN 'Disabled with updateWebhookEndpoint.' ELSE disabled_reason END,
                failing_since = CASE WHEN $6 = 'enabled' THEN NULL ELSE failing_since END
          WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
        [id, accountId, patch.url ?? null, patch.eventTypes ?? null, patch.description ?? null, patch.status ?? null],
      );
      return rows[0];
    },

    async delete(accountId: number, id: number): Promise<boolean> {
      return ((await pool.query('DELETE FROM webhook_endpoints WHERE id = $1 AND account_id = $2', [id, accountId])).rowCount ?? 0) > 0;
    },

    /** A new secret; the old one keeps signing beside it for a day. */
    async rotateSecret(accountId: number, id: number): Promise<WebhookEndpointWithSecret | undefined> {
      const secret = newWebhookSecret();
      const { rows } = await pool.query<WebhookEndpoint>(
        `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = now() + interval '24 hours', secret = $3
          WHERE id = $1 AND account_id = $2 RETURNING ${COLUMNS}`,
        [id, accountId, box.seal(secret)],
      );
      return rows[0] && { ...rows[0], secret };
    },

    /** The endpoint's attempts, newest first. */
    async deliveries(endpointId: number, opts: { limit: number; beforeId?: number }): Promise<{ rows: WebhookDelivery[]; hasMore: boolean }> {
      const { rows } = await pool.query<WebhookDelivery>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
        [endpointId, opts.beforeId ?? Number.MAX_SAFE_INTEGER, opts.limit + 1],
      );
      return pageOf(rows, opts.limit);
    },
  };
}

export type WebhooksRepository = ReturnType<typeof webhooksRepository>;
