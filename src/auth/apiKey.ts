import { hash, randomBytes } from 'node:crypto';

/** Keys look like `as_` + 43 base64url characters (256 random bits). */
const KEY_PATTERN = /^as_[A-Za-z0-9_-]{43}$/;
const KEY_LENGTH = 46;

export function generateApiKey(): string {
  return `as_${randomBytes(32).toString('base64url')}`;
}

export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/**
 * Keys are 256-bit random secrets, so a fast unsalted SHA-256 is enough to make a
 * leaked table useless, and it keeps lookups to one indexed equality.
 */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex'); // one-shot: no Hash object per request
}

/** What an Authorization header held: a well-formed key, or why there is none. */
export type BearerKey = string | 'missing' | 'malformed';

const BEARER = 'Bearer ';

/**
 * Reads `Authorization: Bearer <key>` (RFC 6750; the scheme is case-insensitive): the key
 * (keys start with `as_`, so never `missing` or `malformed`), `missing` when there is no
 * bearer credential at all, `malformed` when there is one but it is not a key.
 */
export function bearerKey(header: string | undefined): BearerKey {
  if (header === undefined) return 'missing';
  // The usual form, read without a regular expression's match array.
  if (header.length === BEARER.length + KEY_LENGTH && header.startsWith(BEARER)) {
    const key = header.slice(BEARER.length);
    return isWellFormedKey(key) ? key : 'malformed';
  }
  if (header.trim() === '') return 'missing';
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) return /^bearer\b/i.test(header) ? 'malformed' : 'missing';
  return isWellFormedKey(match[1]!) ? match[1]! : 'malformed';
}
