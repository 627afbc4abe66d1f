import { hash, randomBytes } from 'node:crypto';

/** Keys look like `as_` + 43 base64url characters (256 random bits). */
const KEY_PATTERN = /^as_[A-Za-z0-9_-]{43}$/;

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

export type BearerCredentials =
  | { kind: 'missing' }
  | { kind: 'malformed' }
  | { kind: 'key'; key: string };

/** Reads `Authorization: Bearer <key>` (RFC 6750; the scheme is case-insensitive). */
export function parseAuthorization(header: string | undefined): BearerCredentials {
  if (header === undefined || header.trim() === '') return { kind: 'missing' };
  const match = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!match) return /^bearer\b/i.test(header) ? { kind: 'malformed' } : { kind: 'missing' };
  return isWellFormedKey(match[1]!) ? { kind: 'key', key: match[1]! } : { kind: 'malformed' };
}
