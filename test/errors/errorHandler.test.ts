import type net from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import errorsPlugin from '../../src/errors/plugin.js';
import arrivalPlugin from '../../src/http/arrival.js';

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

describe('while closing', () => {
  it('answers requests that still arrive with the service 503 Error body and Connection: close', async () => {
    const app = Fastify({ logger: false, return503OnClosing: false });
    await app.register(errorsPlugin);
    await app.register(arrivalPlugin);
    // Holds close() after the arrival plugin's own preClose, while the listener still accepts.
    let closingStarted!: () => void;
    const closing = new Promise<void>((resolve) => (closingStarted = resolve));
    let finishClosing!: () => void;
    const gate = new Promise<void>((resolve) => (finishClosing = resolve));
    app.addHook('preClose', async () => {
      closingStarted();
      await gate;
    });
    app.get('/fast', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as net.AddressInfo;
    expect((await fetch(`http://127.0.0.1:${port}/fast`)).status).toBe(200);

    const closed = app.close();
    await closing;
    const res = await fetch(`http://127.0.0.1:${port}/fast`);
    finishClosing();
    await closed;

    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ code: 'service_unavailable', message: expect.any(String), status: 503 });
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('connection')).toBe('close');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
