import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { requestLineWriter, type RequestLineFields } from '../../src/logging/requestLine.js';

/** A pino logger whose lines are kept, as the service builds it (default levels, time and base fields). */
function capturedLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const full: RequestLineFields = {
  reqId: '5f0c1f2e-2a1b-4c3d-9e8f-000000000001',
  op: 'listPets',
  method: 'GET',
  url: '/v1/pets?limit=20&cursor=djE6MjA',
  status: 200,
  ms: 1.23,
  ip: '127.0.0.1',
  keyId: 7,
  plan: 'business',
  rateLimit: 'allowed',
};

describe('the request line', () => {
  it.each<[string, RequestLineFields]>([
    ['every field', full],
    ['no key, no operation, no limiter', { ...full, op: undefined, keyId: undefined, plan: undefined, rateLimit: undefined, status: 404 }],
    ['a URL that needs escaping', { ...full, url: '/v1/pets?name="x"\\y\u0001\u00e9\u{1f600}' }],
    ['an IPv6 address and a zero duration', { ...full, ip: '::ffff:10.0.0.1', ms: 0 }],
    ['an address a client forged in X-Forwarded-For', { ...full, ip: '1.2.3.4","level":60,"x":"' }],
  ])('is what pino writes for the same fields (%s)', async (_name, fields) => {
    const { logger, lines } = capturedLogger();
    logger.info(fields, 'request');
    requestLineWriter(logger)(fields);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toHaveLength(2);
    const [viaPino, written] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(typeof written!.time).toBe('number');
    expect({ ...written, time: 0 }).toEqual({ ...viaPino, time: 0 });
    // The same keys in the same order, so the two read the same in a terminal.
    expect(Object.keys(written!)).toEqual(Object.keys(viaPino!));
  });
});
