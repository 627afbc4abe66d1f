/** Statements that write events, as text only (pets/sql.ts builds createPet's from them, and the benchmark's ceiling imports that file). */

/**
 * The tail of a statement that writes an event for the one row of CTE `source` (`sql.type`, its
 * object `sql.object`) and who may read it (`sql.recipients`, a bigint[] of account ids, nulls and
 * repeats ignored), and a delivery intent in the outbox (webhook_outbox, migration 017) for each
 * enabled endpoint of those accounts subscribed to the type; answers the source's columns with
 * `eventId` and `queued` (how many intents: the dispatcher, webhooks/outbox.ts, makes them jobs):
 * one statement in all.
 */
export const eventFrom = (source: string, sql: { type: string; object: string; recipients: string }) => `ev AS (
    INSERT INTO events (type, object) SELECT ${sql.type}, ${sql.object} FROM ${source} RETURNING id, xid
  ), recipients AS (
    INSERT INTO event_recipients (account_id, event_id, type, xid)
    SELECT DISTINCT a, ev.id, ${sql.type}, ev.xid FROM ev, unnest(${sql.recipients}) AS a WHERE a IS NOT NULL
  ), outbox AS (
    INSERT INTO webhook_outbox (event_id, endpoint_id, account_id)
    SELECT ev.id, w.id, w.account_id FROM ev, webhook_endpoints w
     WHERE w.account_id = ANY (${sql.recipients}) AND w.status = 'enabled' AND w.event_types && ARRAY[${sql.type}, '*']
     ORDER BY w.id
    RETURNING 1
  )
  SELECT ${source}.*, ev.id AS "eventId", (SELECT count(*)::int FROM outbox) AS queued
    FROM ${source}, ev`;
