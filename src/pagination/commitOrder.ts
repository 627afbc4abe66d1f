/**
 * The commit-ordered read model, for lists a reader follows to see every change (listEvents).
 *
 * Each row carries the `xid8` of the transaction that wrote it (`pg_current_xact_id()`), and a
 * page lists only rows below the horizon: the oldest transaction id still running on the
 * cluster, `pg_snapshot_xmin(pg_current_snapshot())`. Every transaction below it has committed
 * or rolled back, so no row can later appear below a position (xid, id) a reader has passed: a
 * reader following `Link` in (xid, id) order misses nothing, and no writer waits for another.
 *
 * The cost is the wait: a new row is listed only once every transaction that took an xid
 * before it has ended. Transaction ids are the cluster's, not the database's, so that is any
 * open write transaction on the Postgres server, in any database, and prepared transactions
 * too. HORIZON_AGE_SECONDS measures it; docs/RELIABILITY.md says what bounds it.
 */

/** The WHERE condition of a commit-ordered page on `xidColumn` (an xid8 column). */
export const belowHorizon = (xidColumn: string) => `${xidColumn} < pg_snapshot_xmin(pg_current_snapshot())`;

/**
 * Seconds the horizon is held back now: the age of the oldest open transaction holding an xid
 * (from its start: it may have taken the xid later, so this is an upper bound), or the oldest
 * prepared transaction (from its PREPARE); 0 when none. pg_stat_activity shows another role's
 * `backend_xid` and `xact_start` only to a superuser or a member of `pg_read_all_stats`
 * (pg_monitor): without that this counts the service role's own sessions and prepared
 * transactions only (docs/OBSERVABILITY.md).
 */
export const HORIZON_AGE_SECONDS = `SELECT coalesce(extract(epoch FROM clock_timestamp() - least(
    (SELECT min(xact_start) FROM pg_stat_activity WHERE backend_xid IS NOT NULL),
    (SELECT min(prepared) FROM pg_prepared_xacts))), 0)::float8 AS seconds`;
