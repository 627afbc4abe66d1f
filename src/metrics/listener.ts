import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errors, type ApiError } from '../errors/apiError.js';
import { errorResponse } from '../errors/render.js';
import { requestId } from '../http/requestId.js';

export interface MetricsListenerOptions {
  host: string;
  port: number;
  /** When set, a scrape must send `Authorization: Bearer <token>`. */
  token: string | undefined;
  /** The Prometheus text, and its content type. */
  scrape(): Promise<string>;
  contentType: string;
}

const sendsToken = (header = '', token: string) => {
  const [given, expected] = [Buffer.from(header), Buffer.from(`Bearer ${token}`)];
  return given.length === expected.length && timingSafeEqual(given, expected);
};

/**
 * GET /metrics on a listener of its own, apart from the API's: by default on the loopback
 * interface, so a scrape never shares the public port, is never counted against a quota, and
 * costs API traffic nothing. Anything else gets an Error body. Returns its URL and its close.
 */
export async function startMetricsListener(opts: MetricsListenerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const send = (statusCode: number, headers: Record<string, string>, body: string) => {
      res.writeHead(statusCode, { ...headers, 'content-length': Buffer.byteLength(body) }).end(req.method === 'HEAD' ? undefined : body);
    };
    const fail = (error: ApiError) => {
      const { statusCode, headers, body } = errorResponse(error, requestId(req));
      send(statusCode, headers, JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') return fail(errors.not_found(`Route ${req.method} ${path} not found: this listener serves GET /metrics only.`));
    if (req.method !== 'GET' && req.method !== 'HEAD') return fail(errors.method_not_allowed(`${req.method} is not allowed here; use GET, HEAD.`, { allow: 'GET, HEAD' }));
    if (opts.token && !sendsToken(req.headers.authorization, opts.token)) {
      return fail(errors.unauthorized('This endpoint needs the metrics token: "Authorization: Bearer <METRICS_TOKEN>".', { 'www-authenticate': 'Bearer realm="metrics"' }));
    }
    opts.scrape().then(
      (text) => send(200, { 'content-type': opts.contentType, 'cache-control': 'no-store' }, text),
      () => fail(errors.service_unavailable('Metrics are unavailable right now. Retry later.', { 'retry-after': '1' })),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`METRICS_PORT ${opts.port} on ${opts.host} is already in use: set METRICS_PORT to a free port, or METRICS=false.`, { cause: err }) : err),
    );
    server.listen(opts.port, opts.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const close = () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections()));
  return { url: `http://${host}:${port}/metrics`, close };
}
