import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { withTransaction } from '../db/transaction.js';
import { enqueueDeliveries } from '../jobs/queue.js';
import { eventFrom } from './sql.js';
import { isoTimestamp } from '../db/isoTimestamp.js';
import { pageOf } from '../pagination/keysetPage.js';
import { belowHorizon } from '../pagination/commitOrder.js';

export type Event = components['schemas']['Event'];
export type EventType = components['schemas']['EventType'];

/** Where a page of events starts: after this transaction id and event id (listEvents' order). */
export interface EventPosition {
  xid: string;
  id: number;
}

/** An event as the document's Event. */
export const EVENT_COLUMNS = `'evt_' || e.id AS id, e.type, ${isoTimestamp('e.created_at')} AS "createdAt", jsonb_build_object('object', e.object) AS data`;

/** $1 type, $2 object, $3 readers' account ids. */
const RECORD = `WITH given AS (SELECT), ${eventFrom('given', { type: '$1::text', object: '$2::jsonb', recipients: '$3::bigint[]' })}`;

/**
 * One account's events in (xid, id) order, commit-ordered (pagination/commitOrder.ts): only
 * those below the horizon, so no event can later appear before a position a reader has passed.
 */
const page = (filter: string) => `SELECT ${EVENT_COLUMNS}, r.xid::text AS xid
    FROM event_recipients r JOIN events e ON e.id = r.event_id
   WHERE r.account_id = $1 AND (r.xid, r.event_id) > ($2::xid8, $3)${filter}
     AND ${belowHorizon('r.xid')}
   ORDER BY r.xid, r.event_id LIMIT $4`;
const LIST = page('');
const LIST_BY_TYPE = page(' AND r.type = $5');

const GET = `SELECT ${EVENT_COLUMNS} FROM events e JOIN event_recipients r ON r.event_id = e.id AND r.account_id = $2 WHERE e.id = $1`;

const SUBSCRIBED = `SELECT w.id FROM webhook_endpoints w
  WHERE w.account_id = $1 AND w.status = 'enabled' AND w.event_types && ARRAY[$2, '*']`;

/** Events: written with each change (`record`), read by the accounts they belong to. */
export function eventsRepository(pool: pg.Pool, boss: PgBoss) {
  return {
    /**
     * In the change's transaction: the event, its readers, and one delivery job per subscribed
     * enabled endpoint. One job per endpoint rather than one fan-out job per event: a change
     * nobody subscribes to queues nothing, and each endpoint's retries and failures are its own,
     * so a slow or failing endpoint never holds up another's delivery.
     */
    async record(client: pg.PoolClient, type: EventType, object: object, recipients: Array<number | null>): Promise<void> {
      const { rows } = await client.query<{ eventId: number; endpoints: string[] }>(RECORD, [type, object, recipients]);
      await this.enqueue(client, rows[0]!);
    },

    /** The delivery jobs of an event a statement built with `eventFrom` wrote, in the same transaction. */
    async enqueue(client: pg.PoolClient, written: { eventId: number; endpoints: Array<string | number> }): Promise<void> {
      const { eventId, endpoints } = written;
      await enqueueDeliveries(boss, client, endpoints.map((id) => ({ eventId, endpointId: Number(id), series: randomUUID(), attempt: 1 })));
    },

    /** A page of the account's events; `hasMore` when at least one more follows. */
    async list(accountId: number, opts: { limit: number; type?: EventType; after?: EventPosition }): Promise<{ rows: Array<Event & { xid: string }>; hasMore: boolean }> {
      const params: unknown[] = [accountId, opts.after?.xid ?? '0', opts.after?.id ?? 0, opts.limit + 1];
      if (opts.type) params.push(opts.type);
      const { rows } = await pool.query<Event & { xid: string }>(opts.type ? LIST_BY_TYPE : LIST, params);
      return pageOf(rows, opts.limit);
    },

    async get(accountId: number, eventId: number): Promise<Event | undefined> {
      return (await pool.query<Event>(GET, [eventId, accountId])).rows[0];
    },

    /** Queues the event again for every enabled endpoint of the account subscribed to it: how many. */
    async redeliver(accountId: number, event: Event): Promise<number> {
      const eventId = Number(event.id.slice(4));
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<{ id: number }>(SUBSCRIBED, [accountId, event.type]);
        await enqueueDeliveries(boss, client, rows.map((w) => ({ eventId, endpointId: w.id, series: randomUUID(), attempt: 1 })));
        return rows.length;
      });
    },
  };
}

export type EventsRepository = ReturnType<typeof eventsRepository>;
/** What the pet and order repositories need: writing an event in their transaction. */
export type EventRecorder = Pick<EventsRepository, 'record' | 'enqueue'>;
