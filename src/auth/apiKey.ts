import { hash, randomBytes } from 'node:crypto';

/** Keys look like `as_` + 43 base64url characters (256 random bits). */
const KEY_PATTERN = /^as_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return `as_${randomBytes(32).toString('base64url')}`;
}

export function isWellFormedKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** Keys are 256-bit random secrets: an unsalted SHA-256 makes a leaked table useless and keeps lookups to one indexed equality. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * Reads `Authorization: Bearer <key>` (RFC 6750; the scheme is case-insensitive): the key,
 * `missing` when there is no bearer credential at all, `malformed` when there is one but it
 * is not a key (keys start with `as_`, so a key is never either word).
 */
export function bearerKey(header: string | undefined): string | 'missing' | 'malformed' {
  if (header === undefined || !/^bearer\b/i.test(header)) return 'missing';
  const key = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  return key !== undefined && isWellFormedKey(key) ? key : 'malformed';
}
