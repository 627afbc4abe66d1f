import { describe, expect, it } from 'vitest';
import { bearerKey, generateApiKey } from '../../src/auth/apiKey.js';

describe('Authorization header parsing', () => {
  const key = generateApiKey();
  it.each([
    [undefined, 'missing'],
    ['', 'missing'],
    ['   ', 'missing'],
    ['Basic abc', 'missing'],
    ['Bearer', 'malformed'],
    ['Bearer short', 'malformed'],
    [`Bearer ${key} extra`, 'malformed'],
    [`Bearer ${key.slice(0, -1)}!`, 'malformed'],
    [`Bearer ${key}`, key],
    [`bearer ${key}`, key],
    [`BEARER  ${key}`, key],
    [`Bearer \t${key} `, key],
  ])('%j -> %j', (header, expected) => {
    expect(bearerKey(header)).toBe(expected);
  });
});
