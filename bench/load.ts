import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { rotate } from './stats.js';

/** One kind of request against one target: what an arm of the benchmark sends. */
export interface Arm {
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** The body of every request, or a function giving each request its own (a new pet to order, say). */
  body?: string | (() => string);
  /** Every answer must have this status, or the run is invalid (default 200). */
  expect?: number;
  /** The server's process: its CPU time per request is measured too. */
  pid?: number;
  /** The server's allocation meter (Target.allocatedBytes): bytes allocated per request are measured too. */
  allocatedBytes?: () => Promise<number>;
}

export interface Measurement {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  /** CPU time the server process spent per request (user + system), in µs; when the arm names its pid. */
  cpuMicros?: number;
  /** Bytes the server allocated on its JS heap per request; when the arm has an allocation meter. */
  allocBytes?: number;
  /** Why the run is not a result: wrong statuses, errors or timeouts. */
  invalid?: string;
}

/** Runs autocannon (one HTTP/1.1 request in flight per connection, no pipelining). */
export async function measure(
  arm: Arm,
  opts: { seconds: number; connections: number; rate?: number },
): Promise<Measurement> {
  const times: number[] = [];
  const allocatedBefore = await arm.allocatedBytes?.();
  const cpuBefore = arm.pid ? cpuMs(arm.pid) : 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: arm.url,
        method: arm.method ?? 'GET',
        headers: arm.headers,
        ...(typeof arm.body === 'function'
          ? { requests: [{ setupRequest: (req: autocannon.Request) => ({ ...req, body: (arm.body as () => string)() }) }] }
          : { body: arm.body }),
        connections: opts.connections,
        pipelining: 1,
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
  const wrong = Object.entries(result.statusCodeStats ?? {})
    .filter(([code]) => code !== expected)
    .map(([code, s]) => `${s.count}×${code}`);
  const problems = [
    ...wrong,
    ...(result.errors ? [`${result.errors} errors`] : []),
    ...(result.timeouts ? [`${result.timeouts} timeouts`] : []),
  ];
  const requests = result.requests.total;
  const cpuMicros = arm.pid && requests > 0 ? ((cpuMs(arm.pid) - cpuBefore) * 1000) / requests : undefined;
  const allocatedAfter = await arm.allocatedBytes?.();
  return {
    ...(cpuMicros !== undefined && { cpuMicros }),
    ...(allocatedBefore !== undefined && requests > 0 && { allocBytes: (allocatedAfter! - allocatedBefore) / requests }),
    rps: requests / result.duration,
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    requests,
    ...(problems.length || requests === 0 ? { invalid: problems.join(', ') || 'no requests' } : {}),
  };
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The nearest-rank percentile of sorted values. */
function percentile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : NaN;
}

/**
 * Runs every arm once per round after a warm-up; each arm's measurements in order. The order
 * rotates each round, or with `pairs`, alternates forwards and backwards (A B, then B A), so
 * that the arms a ratio compares, listed next to each other, always run one after the other.
 */
export async function rounds(
  arms: Arm[],
  count: number,
  opts: { seconds: number; connections: number; warmupSeconds: number; rate?: number; pairs?: boolean; onMeasured?: (round: number, arm: Arm, m: Measurement) => void },
): Promise<Map<string, Measurement[]>> {
  const { connections } = opts;
  const results = new Map<string, Measurement[]>(arms.map((a) => [a.name, []]));
  for (const arm of arms) await measure(arm, { seconds: opts.warmupSeconds, connections });
  for (let r = 0; r < count; r++) {
    const order = !opts.pairs ? rotate(arms, r) : r % 2 === 0 ? arms : [...arms].reverse();
    for (const arm of order) {
      const m = await measure(arm, { seconds: opts.seconds, connections, rate: opts.rate });
      results.get(arm.name)!.push(m);
      opts.onMeasured?.(r, arm, m);
    }
  }
  return results;
}
