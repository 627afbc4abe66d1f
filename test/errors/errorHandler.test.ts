import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import errorsPlugin from '../../src/errors/plugin.js';

/** A bare app with only the error path, to make failures the real routes cannot produce on demand. */
async function appThrowing(err: Error) {
  const app = Fastify({ logger: false });
  await app.register(errorsPlugin);
  app.get('/boom', async () => {
    throw err;
  });
  return app;
}

describe('error handler', () => {
  it('hides the internals of an unexpected error behind a generic 500', async () => {
    const err = new Error('syntax error at or near "SELEKT" in SELECT * FROM api_keys');
    const res = await (await appThrowing(err)).inject('/boom');
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ code: 'internal_error', message: 'Internal server error.', status: 500 });
    expect(res.body).not.toMatch(/SELEKT|api_keys|at .*\.ts/);
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('turns an unreachable database into 503 with Retry-After', async () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const res = await (await appThrowing(err)).inject('/boom');
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json().code).toBe('service_unavailable');
    expect(res.body).not.toContain('5432');
  });

  it('turns a wait for a pooled connection past its limit into 503 overloaded, sooner to retry than an outage', async () => {
    // pg-pool's error when every connection stayed busy for connectionTimeoutMillis.
    const res = await (await appThrowing(new Error('timeout exceeded when trying to connect'))).inject('/boom');
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.json()).toEqual({ code: 'overloaded', message: 'The service is busy. Retry later.', status: 503 });
  });

  it('still takes a new connection that cannot be opened in time for the database being unavailable', async () => {
    const res = await (await appThrowing(new Error('Connection terminated due to connection timeout'))).inject('/boom');
    expect(res.statusCode).toBe(503);
    expect(res.json().code).toBe('service_unavailable');
  });
});
