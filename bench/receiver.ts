import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook endpoint of the benchmark: answers every delivery 204 at once and notes when each
 * event arrived, and how long after its change (the event's createdAt, its transaction's start).
 */
export async function startReceiver() {
  const seen = new Set<string>();
  let deliveries = 0;
  let firstAt = Infinity;
  let lastAt = 0;
  let delays: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const event = JSON.parse(Buffer.concat(chunks).toString()) as { id: string; createdAt: string };
      deliveries++;
      if (!seen.has(event.id)) {
        seen.add(event.id);
        firstAt = Math.min(firstAt, at);
        lastAt = at;
      }
      delays.push(at - Date.parse(event.createdAt));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** Deliveries received, and distinct events among them. */
    counts: () => ({ deliveries, events: seen.size }),
    /** First and last arrival, ms. */
    span: () => [firstAt, lastAt] as const,
    /** Commit-to-receipt delays (ms) since the last call, sorted. */
    takeDelays: () => {
      const taken = delays.sort((a, b) => a - b);
      delays = [];
      return taken;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
