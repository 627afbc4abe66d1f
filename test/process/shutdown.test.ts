import type net from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import errorsPlugin from '../../src/errors/plugin.js';
import arrivalPlugin from '../../src/http/arrival.js';
import shutdownPlugin from '../../src/process/shutdown.js';
import { startTestServer } from '../helpers/testServer.js';

describe('shutdown', () => {
  it('fails readiness at once and closes connections after each response while the listener serves through the drain, then closes', async () => {
    const server = await startTestServer();
    const auth = { headers: { authorization: `Bearer ${server.key}` } };
    try {
      const before = await fetch(`${server.baseUrl}/v1/pets?limit=1`, auth);
      expect(before.status).toBe(200);
      expect(before.headers.get('connection')).toBe('keep-alive');
      expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);

      // The drain's timer is the test's: it ends when the test says so.
      let endDrain!: () => void;
      let drainMs: number | undefined;
      const stopped = server.app.shutdown(5000, (ms) => {
        drainMs = ms;
        return new Promise<void>((resolve) => (endDrain = resolve));
      });
      expect(drainMs).toBe(5000);

      const readiness = await fetch(`${server.baseUrl}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual({ code: 'service_unavailable', message: expect.any(String), status: 503 });
      // Still served in full during the drain, each answer closing its connection.
      const during = await fetch(`${server.baseUrl}/v1/pets?limit=1`, auth);
      expect(during.status).toBe(200);
      expect(during.headers.get('connection')).toBe('close');
      expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
      expect(server.app.server.listening).toBe(true);

      endDrain();
      await stopped;
      expect(server.app.server.listening).toBe(false);
      await expect(fetch(`${server.baseUrl}/healthz`)).rejects.toThrow();
      expect(server.app.shutdown(5000)).toBe(stopped); // once
    } finally {
      await server.db.drop();
    }
  });

  it('answers requests that still arrive while closing with the service 503 Error body and Connection: close', async () => {
    const app = Fastify({ logger: false, return503OnClosing: false });
    await app.register(errorsPlugin);
    await app.register(arrivalPlugin);
    await app.register(shutdownPlugin);
    // Holds close() after the shutdown plugin's own preClose, while the listener still accepts.
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
