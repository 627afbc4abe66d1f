import { describe, expect, it } from 'vitest';
import { expectMatchesContract } from '../helpers/contract.js';

/** The response checker must itself catch violations, or every test that relies on it proves nothing. */
const rateHeaders = {
  'content-type': 'application/json',
  'x-request-id': 'b6f2c6de-8c3f-4e3b-9d57-0c0f9c1b1a2e',
  'x-ratelimit-limit': '60',
  'x-ratelimit-remaining': '59',
  'x-ratelimit-reset': '1922659200',
  'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
  ratelimit: '"minute";r=59;t=3, "day";r=999;t=30',
};

describe('contract checker', () => {
  const pet = { id: 1, name: 'Rex', categoryId: 7, status: 'available' };
  it('accepts a conforming response', () => {
    const headers = new Headers({ ...rateHeaders, etag: 'W/"x"' });
    expect(() => expectMatchesContract('GET', '/v1/pets', { status: 200, headers, body: [pet] })).not.toThrow();
  });
  it('rejects an undocumented status', () => {
    expect(() => expectMatchesContract('GET', '/v1/pets', { status: 418, headers: new Headers(rateHeaders), body: {} })).toThrow(/not documented/);
  });
  it('rejects a body that does not match the schema', () => {
    expect(() =>
      expectMatchesContract('GET', '/v1/pets', { status: 200, headers: new Headers(rateHeaders), body: [{ ...pet, status: 'lost' }] }),
    ).toThrow(/does not match/);
  });
  it('rejects a missing required header', () => {
    const headers = new Headers({ ...rateHeaders, etag: 'W/"x"' });
    headers.delete('x-ratelimit-reset');
    expect(() => expectMatchesContract('GET', '/v1/pets', { status: 200, headers, body: [] })).toThrow(/X-RateLimit-Reset/);
  });
  it('rejects an error body whose status differs from the HTTP status', () => {
    expect(() =>
      expectMatchesContract('GET', '/v1/pets', { status: 400, headers: new Headers(rateHeaders), body: { code: 'x', message: 'y', status: 401 } }),
    ).toThrow();
  });
});
