import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors, serviceUnavailable } from '../errors/apiError.js';
import { isWorker, scrapeAllWorkers } from './cluster.js';

export interface MetricsRoutesOptions {
  /** When set, a scrape must send `Authorization: Bearer <token>`. */
  token: string | undefined;
}

function sendsToken(request: FastifyRequest, token: string): boolean {
  const given = Buffer.from(request.headers.authorization ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * GET /metrics in Prometheus text format: outside the API, so never counted against a
 * quota; with WORKERS > 1, the sum of every worker's metrics.
 */
export default async function metricsRoutes(app: FastifyInstance, opts: MetricsRoutesOptions): Promise<void> {
  app.get('/metrics', { config: { quietWhenOk: true } }, async (request, reply) => {
    if (opts.token && !sendsToken(request, opts.token)) {
      throw errors.unauthorized('This endpoint needs the metrics token: "Authorization: Bearer <METRICS_TOKEN>".', {
        'www-authenticate': 'Bearer realm="metrics"',
      });
    }
    const text = isWorker()
      ? await scrapeAllWorkers().catch((err: Error) => {
          request.log.warn({ err: err.message }, 'metrics of the other workers unavailable');
          throw serviceUnavailable(1);
        })
      : await app.metricsRegistry.metrics();
    return reply.header('content-type', app.metricsRegistry.contentType).header('cache-control', 'no-store').send(text);
  });
}
