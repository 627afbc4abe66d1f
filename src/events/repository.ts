import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { withTransaction } from '../db/transaction.js';
import { REDELIVERIES_PER_HOUR } from '../limits.js';
import { enqueueDeliveries } from '../webhooks/queue.js';
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

/**
 * Before a redelivery of event $2 for account $1 (type $3): each subscribed enabled endpoint, and
 * whether a redelivery series of the event to it is still open; the account's series of the last
 * hour, and in how many seconds the oldest of them leaves the hour. A series open longer than $4
 * seconds (its jobs lost: no schedule lasts that long) is ended first, so it cannot block forever.
 */
const END_STALE = `UPDATE webhook_redeliveries SET ended_at = now() WHERE event_id = $1 AND ended_at IS NULL AND created_at < now() - make_interval(secs => $2)`;
const REDELIVERY_PLAN = `SELECT w.id, EXISTS (SELECT FROM webhook_redeliveries r WHERE r.event_id = $2 AND r.endpoint_id = w.id AND r.ended_at IS NULL) AS open,
         (SELECT count(*)::int FROM webhook_redeliveries b WHERE b.account_id = $1 AND b.created_at > now() - interval '1 hour') AS used,
         (SELECT ceil(extract(epoch FROM min(b.created_at) + interval '1 hour' - now()))::int FROM webhook_redeliveries b
           WHERE b.account_id = $1 AND b.created_at > now() - interval '1 hour') AS "resetsIn"
    FROM webhook_endpoints w
   WHERE w.account_id = $1 AND w.status = 'enabled' AND w.event_types && ARRAY[$3, '*']
   ORDER BY w.id`;
const OPEN_SERIES = `INSERT INTO webhook_redeliveries (series, account_id, event_id, endpoint_id) SELECT unnest($1::uuid[]), $2, $3, unnest($4::bigint[])`;

/** Why a redelivery was refused; the handler answers with the matching error. */
export class RedeliveryRefused extends Error {
  constructor(
    readonly reason: 'redelivery_in_progress' | 'redelivery_budget_exhausted',
    readonly detail: { endpoints?: number[]; used?: number; retryAfterSeconds?: number },
  ) {
    super(reason);
  }
}

/** What a statement built with `eventFrom` answers: the event, and how many delivery intents it put in the outbox. */
export interface WrittenEvent {
  eventId: number;
  queued: number;
}

/** Events: written with each change (`record`), read by the accounts they belong to. */
export function eventsRepository(pool: pg.Pool, boss: PgBoss) {
  return {
    /**
     * In the change's transaction, in one statement: the event, its readers, and one delivery intent
     * per subscribed enabled endpoint in the outbox (the dispatcher, webhooks/outbox.ts, makes each a
     * job once this commits). One per endpoint rather than one fan-out per event: a change nobody
     * subscribes to queues nothing, and each endpoint's retries and failures are its own, so a slow
     * or failing endpoint never holds up another's delivery. Answers how many intents it queued.
     */
    async record(client: pg.PoolClient, type: EventType, object: object, recipients: Array<number | null>): Promise<number> {
      const { rows } = await client.query<WrittenEvent>(RECORD, [type, object, recipients]);
      return rows[0]!.queued;
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

    /**
     * Queues the event again, as a new series, for every enabled endpoint of the account subscribed
     * to it that has no redelivery series of it still open; how many. Refused (nothing queued) when
     * every such endpoint has one open, or when the account would start more than
     * REDELIVERIES_PER_HOUR series within an hour. The account's row orders its redeliveries, so the
     * count holds until commit; `staleAfterSeconds` is longer than any series can last.
     */
    async redeliver(accountId: number, event: Event, staleAfterSeconds: number): Promise<number> {
      const eventId = Number(event.id.slice(4));
      return withTransaction(pool, async (client) => {
        await client.query('SELECT FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [accountId]);
        await client.query(END_STALE, [eventId, staleAfterSeconds]);
        const { rows } = await client.query<{ id: string; open: boolean; used: number; resetsIn: number | null }>(REDELIVERY_PLAN, [accountId, eventId, event.type]);
        const due = rows.filter((w) => !w.open).map((w) => Number(w.id));
        if (rows.length > 0 && due.length === 0) throw new RedeliveryRefused('redelivery_in_progress', { endpoints: rows.map((w) => Number(w.id)) });
        const used = rows[0]?.used ?? 0;
        if (used + due.length > REDELIVERIES_PER_HOUR) throw new RedeliveryRefused('redelivery_budget_exhausted', { used, retryAfterSeconds: Math.max(1, rows[0]!.resetsIn ?? 1) });
        const jobs = due.map((endpointId) => ({ eventId, endpointId, accountId, series: randomUUID(), attempt: 1, redelivery: true as const }));
        await client.query(OPEN_SERIES, [jobs.map((j) => j.series), accountId, eventId, due]);
        await enqueueDeliveries(boss, client, jobs);
        return jobs.length;
      });
    },
  };
}

export type EventsRepository = ReturnType<typeof eventsRepository>;
/** What the pet and order repositories need: writing an event in their transaction. */
export type EventRecorder = Pick<EventsRepository, 'record'>;
