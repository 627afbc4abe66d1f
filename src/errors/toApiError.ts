import type { FastifyError } from 'fastify';
import { isDatabaseUnavailable, isPoolWaitTimeout } from '../db/unavailable.js';
import { BODY_LIMIT } from '../limits.js';
import { ApiError, errors, overloaded, serviceUnavailable } from './apiError.js';

const RESPONSE_MISMATCH = 'FST_RESPONSE_VALIDATION_FAILED_VALIDATION';

/** Fastify's own errors a client causes, as the ApiError each becomes. */
const FASTIFY_ERRORS: Record<string, (err: FastifyError) => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () => errors.payload_too_large(`Request body is larger than ${BODY_LIMIT} bytes.`),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => errors.unsupported_media_type('Content-Type must be application/json (UTF-8).'),
  FST_ERR_CTP_INVALID_TYPE: () => errors.unsupported_media_type('Content-Type must be application/json (UTF-8).'),
  FST_ERR_CTP_EMPTY_JSON_BODY: (err) => errors.invalid_json(err.message),
  FST_ERR_CTP_INVALID_JSON_BODY: (err) => errors.invalid_json(err.message),
  FST_ERR_BAD_URL: () => errors.bad_request('The URL is not valid: it has a malformed percent-encoding.'),
  // Over maxParamLength: no valid identifier is that long, so it is a validation error, not a 414.
  FST_ERR_MAX_PARAM_LENGTH: () => errors.validation_failed('A path parameter is too long.'),
};

/** Faults that repeat with the traffic: logged once per interval with a count (logging/faultLog.ts), not once per request. */
export const DATABASE_UNAVAILABLE = 'database unavailable: answering 503 service_unavailable';
export const POOL_SATURATED = 'every database connection busy past the wait limit: answering 503 overloaded';

export interface Classified {
  error: ApiError;
  /**
   * How the failure is logged: a bug as an error with its stack, every request; a fault
   * (`fault`, the line's message) once per interval with a count; a client's mistake not at all.
   */
  log?: 'error' | { fault: string };
}

/** Maps anything thrown while serving a request to the ApiError it is answered with. */
export function toApiError(err: FastifyError | Error): Classified {
  if (err instanceof ApiError) {
    return { error: err, ...(err.statusCode >= 500 && { log: { fault: `answering ${err.statusCode} ${err.code}: ${err.message}` } }) };
  }
  const fastifyError = err as FastifyError;
  // A response that breaks openapi.yaml (RESPONSE_VALIDATION) is the service's bug, not the client's.
  if (fastifyError.code === RESPONSE_MISMATCH) return { error: errors.internal_error('Internal server error.'), log: 'error' };
  if (fastifyError.validation) return { error: errors.validation_failed(err.message) };
  const known = fastifyError.code ? FASTIFY_ERRORS[fastifyError.code] : undefined;
  if (known) return { error: known(fastifyError) };
  if (isPoolWaitTimeout(err)) return { error: overloaded(), log: { fault: POOL_SATURATED } };
  if (isDatabaseUnavailable(err)) return { error: serviceUnavailable(), log: { fault: DATABASE_UNAVAILABLE } };
  if (fastifyError.statusCode && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return { error: errors.bad_request(err.message) };
  }
  return { error: errors.internal_error('Internal server error.'), log: 'error' };
}
