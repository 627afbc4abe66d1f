import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { postWebhook } from '../../src/webhooks/send.js';

/** A receiver that counts connections and requests; `onSecondOnSocket` decides what happens to a connection's second request. */
async function receiver(onSecondOnSocket: 'answer' | 'drop') {
  const perSocket = new Map<Socket, number>();
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    req.resume();
    // The receiver closing a kept connection just as it is reused: the request gets no answer.
    if (n === 2 && onSecondOnSocket === 'drop') return req.socket.destroy();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    connections: () => perSocket.size,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())).then(() => server.closeAllConnections()),
  };
}

const post = (url: string) => postWebhook(url, '{"id":"evt_1"}', {}, { timeoutMs: 2000, allowPrivate: true });

describe('webhook connections kept open between deliveries', () => {
  let close: () => Promise<void> = async () => {};
  afterEach(() => close());

  it('three deliveries to one receiver, one after another, go over one connection', async () => {
    const r = await receiver('answer');
    close = r.close;
    for (let i = 0; i < 3; i++) expect((await post(r.url)).status).toBe(204);
    expect([r.connections(), r.requests()]).toEqual([1, 3]);
  });

  it('a kept connection the receiver drops as it is reused is retried once on a new one: the attempt succeeds', async () => {
    const r = await receiver('drop');
    close = r.close;
    expect((await post(r.url)).status).toBe(204);
    const second = await post(r.url);
    expect(second).toMatchObject({ status: 204, error: null });
    // The first request, the dropped second, and the second again on a new connection.
    expect([r.connections(), r.requests()]).toEqual([2, 3]);
  });
});
