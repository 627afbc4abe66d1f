import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

/** One kind of request against one server: what an arm of the benchmark sends. */
export interface Arm {
  name: string;
  url: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  /** The body of every request. */
  body?: string;
  /** Each request's own body, and path after url's, instead (a new pet to order, a pet to change), and headers of its own besides `headers` (an Idempotency-Key). */
  next?: () => { path?: string; body?: string; headers?: Record<string, string> };
  /** Every answer must have this status, or the run is invalid (default 200). */
  expect?: number;
  /** The server's process, whose CPU time per request is measured. */
  pid: number;
}

export interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** Requests sent: those answered, and those in flight when the load stopped (at most one per connection), which the server still completes. */
  sent: number;
  /** The server's database round trips per request sent, when it runs behind a proxy (roundTrips.ts). */
  roundTrips?: number;
  /** CPU time (user + system) the server process spent per request, in µs. */
  cpuMicros: number;
  /** Why the run is not a result: wrong statuses, errors or timeouts. */
  invalid?: string;
}

/** Runs autocannon (one request in flight per connection); with `rate`, at that many requests per second overall. */
export async function measure(arm: Arm, opts: { seconds: number; connections: number; rate?: number }): Promise<Measurement> {
  const times: number[] = [];
  const cpuBefore = cpuMs(arm.pid);
  const { body, next } = arm;
  const base = new URL(arm.url).pathname;
  const setupRequest = (req: autocannon.Request) => {
    const n = next!();
    return { ...req, ...(n.path !== undefined && { path: base + n.path }), ...(n.body !== undefined && { body: n.body }), ...(n.headers && { headers: { ...req.headers, ...n.headers } }) };
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: arm.url,
        method: arm.method ?? 'GET',
        headers: arm.headers,
        ...(next ? { requests: [{ setupRequest }] } : { body }),
        connections: opts.connections,
        duration: opts.seconds,
        overallRate: opts.rate,
        timeout: 10,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    // autocannon's own percentiles are whole milliseconds; these keep the microseconds.
    instance.on('response', (_client, _status, _bytes, ms) => times.push(ms));
  });
  times.sort((a, b) => a - b);
  const expected = String(arm.expect ?? 200);
  const problems = [
    ...Object.entries(result.statusCodeStats ?? {}).filter(([code]) => code !== expected).map(([code, s]) => `${s.count}×${code}`),
    ...(result.errors ? [`${result.errors} errors`] : []),
    ...(result.timeouts ? [`${result.timeouts} timeouts`] : []),
  ];
  const requests = result.requests.total;
  return {
    rps: requests / result.duration,
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    requests,
    sent: result.requests.sent,
    cpuMicros: requests > 0 ? ((cpuMs(arm.pid) - cpuBefore) * 1000) / requests : NaN,
    ...(problems.length || requests === 0 ? { invalid: problems.join(', ') || 'no requests' } : {}),
  };
}

/** CPU time (user + system, all threads) a process has used so far, in ms (/proc/<pid>/stat, in ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : NaN;
}

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Warms every arm up, then runs them `count` times, forwards one round and backwards the next
 * (A B C D, then D C B A), so that the two arms of a pair, listed next to each other, always
 * run one after the other and the machine's drift falls on both (with three in a row, A B C then
 * C B A, the middle one is next to both others every round). Each arm's measurements in order.
 */
export async function pairedRounds(
  arms: Arm[],
  count: number,
  opts: {
    seconds: number;
    warmupSeconds: number;
    connections: number;
    rate?: number;
    onMeasured: (round: number, arm: Arm, m: Measurement) => void;
    /** Runs each round's measurement (not the warm-up): to watch the database meanwhile (locks.ts). */
    around?: (arm: Arm, run: () => Promise<Measurement>) => Promise<Measurement>;
  },
): Promise<Map<string, Measurement[]>> {
  const results = new Map<string, Measurement[]>(arms.map((a) => [a.name, []]));
  const around = opts.around ?? ((_arm, run) => run());
  for (const arm of arms) await measure(arm, { seconds: opts.warmupSeconds, connections: opts.connections });
  for (let r = 0; r < count; r++) {
    for (const arm of r % 2 === 0 ? arms : [...arms].reverse()) {
      const m = await around(arm, () => measure(arm, { seconds: opts.seconds, connections: opts.connections, rate: opts.rate }));
      results.get(arm.name)!.push(m);
      opts.onMeasured(r, arm, m);
    }
  }
  return results;
}
