/** The service's fixed limits, in one place (openapi.yaml states them for clients). */

/** Largest request body, in bytes (openapi.yaml: "limited to 64 KiB"). */
export const BODY_LIMIT = 64 * 1024;
/** Deeper JSON bodies are refused before parsing; no valid request nests beyond 2. */
export const MAX_JSON_DEPTH = 32;
/** How long an Idempotency-Key and its saved response are kept (openapi.yaml: "at least 24 hours"). */
export const IDEMPOTENCY_RETENTION_HOURS = 24;
/** How long events are kept (openapi.yaml, listEvents: "kept 30 days, then deleted"); their delivery attempts go with them. */
export const EVENT_RETENTION_DAYS = 30;
/**
 * Longest path parameter the router matches (Fastify's default is 100). Longer ones are
 * answered 400 before routing; up to this, a bad id reaches validation like any other.
 */
export const MAX_PARAM_LENGTH = 1024;
/** How often each instance reads which API keys were issued or revoked (a key issued elsewhere is accepted within this). */
export const KEY_INDEX_REFRESH_MS = 500;
/** Live (neither revoked nor expired) keys an account may hold (openapi.yaml, createApiKey). */
export const MAX_LIVE_KEYS_PER_ACCOUNT = 100;
/** How often each instance writes when its keys were last used (openapi.yaml: lastUsedAt "to within about a minute"). */
export const KEY_USAGE_FLUSH_MS = 60_000;
/**
 * A key's cached answer is looked up again when older than this: a revocation, or a rolled key's
 * end set sooner than this, takes effect within it (openapi.yaml promises 5 s and "to the second").
 */
export const KEY_CACHE_TTL_MS = 1_000;
/** A recurring fault (an outage, refused connections) writes at most one log line per this long, with the count since the last. */
export const FAULT_LOG_INTERVAL_MS = 10_000;
/**
 * After an error answer to an authenticated request whose body is still arriving, the
 * connection stays open this long before it closes, so the client can read the answer (nginx's
 * lingering close: closing at once can reset the connection first; errors/lingeringClose.ts).
 * At most BODY_LIMIT of the rest is read meanwhile, none of a body declared over the limit, and
 * none of an unauthenticated request's.
 */
export const LINGER_MS = 2_000;

/** Webhook endpoints one account may have (409 too_many_webhook_endpoints beyond). */
export const MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT = 16;
/** Bytes of a webhook receiver's answer read before the connection is closed; the body is never kept. */
export const WEBHOOK_RESPONSE_BYTES = 64 * 1024;
/**
 * Redelivery series (redeliverEvent: one per endpoint it queues for) one account may start in any
 * hour (429 redelivery_budget_exhausted beyond); and one series of an event to an endpoint is open
 * at a time (409 redelivery_in_progress).
 */
export const REDELIVERIES_PER_HOUR = 100;
