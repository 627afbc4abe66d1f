/** A failure with a stable Error `code`; the error handler turns it into the spec's Error body. */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const REALM = 'animal-store';

export const missingApiKey = () =>
  new ApiError(401, 'unauthorized', 'Missing API key. Send it as "Authorization: Bearer <API_KEY>".', {
    'www-authenticate': `Bearer realm="${REALM}"`,
  });

export const invalidApiKey = () =>
  new ApiError(401, 'unauthorized', 'Invalid API key: it is malformed, unknown or revoked.', {
    'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"`,
  });

export const petNotFound = (id: number) => new ApiError(404, 'pet_not_found', `Pet ${id} not found.`);

export const invalidCursor = () =>
  new ApiError(400, 'invalid_cursor', 'querystring/cursor is not a cursor produced by this service.');

export const serviceUnavailable = (retryAfterSeconds = 5) =>
  new ApiError(503, 'service_unavailable', 'The service is temporarily unavailable. Retry later.', {
    'retry-after': String(retryAfterSeconds),
  });
