import type { components } from '../../generated/openapi.js';

/** The codes openapi.yaml lists (ErrorCode): a code the document lacks is a type error here. */
export type ErrorCode = components['schemas']['ErrorCode'];

/** The HTTP status of each code; `satisfies` makes a missing or unknown code a type error. */
export const errorStatuses = {
  validation_failed: 400,
  invalid_json: 400,
  invalid_cursor: 400,
  bad_request: 400,
  webhook_url_not_allowed: 400,
  unauthorized: 401,
  forbidden: 403,
  insufficient_scope: 403,
  not_found: 404,
  pet_not_found: 404,
  order_not_found: 404,
  api_key_not_found: 404,
  event_not_found: 404,
  webhook_endpoint_not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  precondition_failed: 412,
  expectation_failed: 417,
  idempotency_key_in_use: 409,
  pet_not_available: 409,
  invalid_order_transition: 409,
  order_expired: 409,
  pet_status_held_by_order: 409,
  pet_has_open_order: 409,
  too_many_open_orders: 409,
  last_key: 409,
  too_many_api_keys: 409,
  api_key_inactive: 409,
  too_many_webhook_endpoints: 409,
  redelivery_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  temporarily_banned: 429,
  redelivery_budget_exhausted: 429,
  headers_too_large: 431,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503,
  overloaded: 503,
} as const satisfies Record<ErrorCode, number>;

/** A failure with a stable Error `code`; the error path turns it into the spec's Error body. */
export class ApiError extends Error {
  readonly statusCode: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = errorStatuses[code];
  }
}

type Factory = (message: string, headers?: Record<string, string>) => ApiError;

/** One factory per code, named after it: `errors.pet_not_found('Pet 4 not found.')`. */
export const errors = Object.fromEntries(
  (Object.keys(errorStatuses) as ErrorCode[]).map((code) => [code, (message: string, headers?: Record<string, string>) => new ApiError(code, message, headers)]),
) as Record<ErrorCode, Factory>;

/** The realm of the service's bearer challenges (RFC 6750). */
const REALM = 'animal-store';

export const invalidKey = () =>
  errors.unauthorized('Invalid API key: it is malformed, unknown, revoked or expired.', { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` });
export const missingKey = () => errors.unauthorized('Missing API key. Send it as "Authorization: Bearer <API_KEY>".', { 'www-authenticate': `Bearer realm="${REALM}"` });
/** 403 with the RFC 6750 §3.1 challenge naming the scope the key lacks. */
export const insufficientScope = (scope: string) =>
  errors.insufficient_scope(`This API key lacks the scope ${scope}.`, { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"` });

export const serviceUnavailable = () => errors.service_unavailable('The service is temporarily unavailable. Retry later.', { 'retry-after': '5' });

/** Every database connection stayed busy past the pool's wait limit: the load, not an outage, so sooner than an outage. */
export const overloaded = () => errors.overloaded('The service is busy. Retry later.', { 'retry-after': '2' });
