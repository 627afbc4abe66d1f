import http from 'node:http';

export interface LoadResult {
  sent: number;
  /** By outcome: `200`, `502`, `error ECONNRESET`, `error timeout`… every request exactly once. */
  counts: Record<string, number>;
  /** Requests that did not answer 200. */
  failed: number;
  seconds: number;
  slowestMs: number;
}

export interface OpenLoad {
  sent(): number;
  /** Sent (or queued for a connection) and not answered yet. */
  outstanding(): number;
  /** Stops sending, waits for every outstanding request (each bounded by its timeout), and counts. */
  stop(): Promise<LoadResult>;
}

/**
 * GETs `url` on a fixed schedule of `rate` a second, whatever the answers take (open loop: a
 * slow or failing server does not slow the sender down), over keep-alive connections.
 * `headers` may be a function, called for each request (a new made-up key each time, say).
 * A request with no answer within `timeoutMs` counts as `error timeout`.
 */
export function openLoad(
  url: string,
  { rate, headers = {}, timeoutMs = 35_000 }: { rate: number; headers?: Record<string, string> | (() => Record<string, string>); timeoutMs?: number },
): OpenLoad {
  // fifo: every connection is used in turn, so none sits idle until the balancer closes it under a request.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64, scheduling: 'fifo' });
  const counts: Record<string, number> = {};
  let sent = 0;
  let answered = 0;
  let slowestMs = 0;
  let allAnswered: (() => void) | undefined;
  const started = performance.now();

  const send = () => {
    sent += 1;
    const t0 = performance.now();
    let done = false;
    const finish = (outcome: string) => {
      if (done) return;
      done = true;
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      slowestMs = Math.max(slowestMs, performance.now() - t0);
      answered += 1;
      if (answered === sent) allAnswered?.();
    };
    const req = http.get(url, { agent, headers: typeof headers === 'function' ? headers() : headers, timeout: timeoutMs }, (res) => {
      res.on('error', (err: NodeJS.ErrnoException) => finish(`error ${err.code ?? err.message}`));
      res.on('end', () => finish(String(res.statusCode)));
      res.resume();
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (err: NodeJS.ErrnoException) => finish(`error ${err.code ?? err.message}`));
  };

  // Catches up after a late tick, so the schedule holds on average.
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) * rate) / 1000);
    while (sent < due) send();
  }, 2);

  return {
    sent: () => sent,
    outstanding: () => sent - answered,
    async stop() {
      clearInterval(timer);
      const seconds = (performance.now() - started) / 1000;
      if (answered < sent) await new Promise<void>((resolve) => (allAnswered = resolve));
      agent.destroy();
      return { sent, counts: { ...counts }, failed: sent - (counts['200'] ?? 0), seconds, slowestMs };
    },
  };
}
