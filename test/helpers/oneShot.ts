import http from 'node:http';

export interface OneShot {
  status?: number;
  connection?: string;
  body?: string;
  /** Set instead of status when the request failed (ECONNRESET, ECONNREFUSED, ...). */
  error?: string;
}

/**
 * One GET on a connection of its own (no keep-alive pool): what came back, or how it failed.
 * A request with no answer within `timeoutMs` counts as `error timeout`, never as a hang.
 */
export function getOnce(port: number, path: string, key?: string, timeoutMs = 15_000): Promise<OneShot> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, agent: false, timeout: timeoutMs, headers: key ? { authorization: `Bearer ${key}` } : {} },
      (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, body }));
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end();
  });
}

/** `200`, `503`, or `error ECONNRESET`: for counting outcomes exactly. */
export const outcomeOf = (a: OneShot) => (a.status ? String(a.status) : `error ${a.error}`);

export function countOutcomes(answers: OneShot[]): Record<string, number> {
  return answers.map(outcomeOf).reduce<Record<string, number>>((acc, o) => ({ ...acc, [o]: (acc[o] ?? 0) + 1 }), {});
}
