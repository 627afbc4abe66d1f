/** What CORS allows and exposes, as derived from openapi.yaml (src/http/corsPolicy.ts): the expectation both CORS tests hold it to. */
export const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-Match', 'If-None-Match', 'X-Request-Id'];

/** Every response header the document declares; WWW-Authenticate too: on a 403 it names the scope a key lacks. */
export const EXPOSED_HEADERS = [
  'API-Stability',
  'Deprecation',
  'ETag',
  'Idempotent-Replayed',
  'Link',
  'Location',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Sunset',
  'WWW-Authenticate',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-Request-Id',
];
