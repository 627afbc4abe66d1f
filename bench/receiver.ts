import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook endpoint of the benchmark: answers every delivery 204 at once and notes, for each
 * event, how long after its change (its createdAt, its transaction's start) it first arrived.
 */
export async function startReceiver() {
  /** Event number (evt_<n>) → ms from its createdAt to its first arrival. */
  const delays = new Map<number, number>();
  let deliveries = 0;
  let firstAt = Infinity;
  let lastAt = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const event = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; createdAt: string };
      const n = Number(event.id.slice(4));
      deliveries++;
      if (!delays.has(n)) {
        delays.set(n, at - Date.parse(event.createdAt));
        firstAt = Math.min(firstAt, at);
        lastAt = at;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** Deliveries received, and the distinct events among them. */
    counts: () => ({ deliveries, events: delays.size }),
    /** First and last first-arrival of an event, ms since the epoch. */
    span: () => [firstAt, lastAt] as const,
    /** The delays of the events numbered above `n`, sorted. */
    delaysAbove: (n: number) => [...delays].filter(([id]) => id > n).map(([, ms]) => ms).sort((a, b) => a - b),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
