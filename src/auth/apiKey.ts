import { hash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Random characters of a key: 30 base62 characters, about 178 bits. */
const RANDOM_LENGTH = 30;
/** A CRC32 (< 62^6) in base62, zero-padded. */
const CHECKSUM_LENGTH = 6;

/**
 * Keys look like `ask_` + 30 random base62 characters + their CRC32 in 6 base62 characters
 * (GitHub's token format): a mistyped or made-up key fails the checksum without any lookup,
 * and secret scanners match `\bask_[0-9A-Za-z]{36}\b` (docs/ACCOUNTS.md).
 */
const KEY_PATTERN = /^ask_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/;
/** Keys made before accounts: `as_` + 43 base64url characters (256 random bits), still accepted. */
const LEGACY_KEY_PATTERN = /^as_[A-Za-z0-9_-]{43}$/;

/** How many characters of a key `listApiKeys` shows to recognise it by (`ask_` and 4 random ones, never enough to use it). */
export const KEY_PREFIX_LENGTH = 8;

function checksum(random: string): string {
  let n = crc32(random);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++, n = Math.floor(n / 62)) out = BASE62[n % 62] + out;
  return out;
}

export function generateApiKey(): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)];
  return `ask_${random}${checksum(random)}`;
}

export function isWellFormedKey(key: string): boolean {
  const parts = KEY_PATTERN.exec(key);
  return parts ? checksum(parts[1]!) === parts[2] : LEGACY_KEY_PATTERN.test(key);
}

/** What `listApiKeys` shows of a key: its first characters (`as_` alone for legacy keys, whose rest is random). */
export const keyPrefix = (key: string) => (key.startsWith('ask_') ? key.slice(0, KEY_PREFIX_LENGTH) : 'as_');

/** Keys are random secrets of 178 bits or more: an unsalted SHA-256 makes a leaked table useless and keeps lookups to one indexed equality. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * Reads `Authorization: Bearer <key>` (RFC 6750; the scheme is case-insensitive): the key,
 * `missing` when there is no bearer credential at all, `malformed` when there is one but it
 * is not a key (keys start with `as`, so a key is never either word).
 */
export function bearerKey(header: string | undefined): string | 'missing' | 'malformed' {
  if (header === undefined || !/^bearer\b/i.test(header)) return 'missing';
  const key = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1];
  return key !== undefined && isWellFormedKey(key) ? key : 'malformed';
}
