import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type pg from 'pg';
import accountsPlugin from './accounts/plugin.js';
import { accountsRepository } from './accounts/repository.js';
import { countRefusal, routerErrors } from './api/gate.js';
import apiPlugin from './api/plugin.js';
import authenticationPlugin from './auth/plugin.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import databasePlugin from './db/plugin.js';
import docsPlugin from './docs/plugin.js';
import errorsPlugin, { handleError } from './errors/plugin.js';
import { eventRetentionSchedule } from './events/retention.js';
import healthPlugin from './health/plugin.js';
import corsPlugin from './http/cors.js';
import { corsPolicy } from './http/corsPolicy.js';
import arrivalPlugin from './http/arrival.js';
import { clientErrorHandler } from './http/clientError.js';
import protocolAnswersPlugin from './http/protocolAnswers.js';
import { requestId } from './http/requestId.js';
import { idempotencyKeyExpirySchedule } from './idempotency/retention.js';
import jobsPlugin from './jobs/plugin.js';
import type { Schedule } from './jobs/schedules.js';
import { loggerOptions } from './logging/loggerOptions.js';
import requestLogPlugin from './logging/requestLog.js';
import { BODY_LIMIT, MAX_PARAM_LENGTH } from './limits.js';
import metricsPlugin from './metrics/plugin.js';
import { apiBasePath, enumValues, loadDocument, operationsById } from './openapi/document.js';
import { orderExpirySchedule } from './orders/expiry.js';
import shutdownPlugin from './process/shutdown.js';
import rateLimitPlugin from './ratelimit/plugin.js';
import tracingPlugin from './tracing/plugin.js';
import webhooksPlugin from './webhooks/plugin.js';

/**
 * The service's scheduled work (docs/ARCHITECTURE.md), each sweep from what owns it: order holds
 * every minute (orders/expiry.ts), retention hourly: events (events/retention.ts) and Idempotency-Keys
 * (idempotency/retention.ts). buildApp gives them to the scheduler (app.jobs.schedule).
 */
export const serviceSchedules = (pool: pg.Pool, eventsQueued: () => void): Schedule[] => [
  orderExpirySchedule(pool, eventsQueued),
  eventRetentionSchedule(pool),
  idempotencyKeyExpirySchedule(pool),
];

export interface AppOptions {
  /** Time for everything that counts or caches; tests pass a clock they move. */
  clock?: Clock;
  /** Where log lines go (stdout by default); tests read them. */
  logStream?: NodeJS.WritableStream;
}

/**
 * Builds the whole service as a tree of plugins, ready to listen (docs/ARCHITECTURE.md):
 * root: errors, the arrival hook, shutdown, protocol answers, CORS, the request line and
 * metrics (whose listener is their own), the shared capabilities (database,
 * authentication, accounts, rate limit) and background work (jobs, webhooks); beside each other: health, docs, and the API under its
 * base path, whose gate alone authenticates and counts.
 */
export async function buildApp(config: Config, opts: AppOptions = {}): Promise<FastifyInstance> {
  const clock = opts.clock ?? systemClock;
  const doc = loadDocument();
  const basePath = apiBasePath(doc);
  const app = Fastify({
    logger: loggerOptions(config, opts.logStream),
    // Fastify's two lines per request are replaced by one (logging/requestLog.ts).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    // Deadlines for each phase: headers, then the whole request (headers and body); a
    // request still arriving past them is answered 408 (http/clientError.ts).
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    // requireHostHeader: a request without Host is answered in the Error shape (http/arrival.ts), not Node's empty 400.
    http: { headersTimeout: config.http.headersTimeoutMs, connectionsCheckingInterval: 500, requireHostHeader: false },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Router errors (bad percent-encoding, over-long parameters) take the one error path too, counted under /v1.
    frameworkErrors: routerErrors(basePath, handleError),
    return503OnClosing: false,
    clientErrorHandler,
    // Opening the database is a plugin: a first start of the embedded store on a busy machine takes longer than the default 10 s.
    pluginTimeout: 120_000,
  });

  await app.register(tracingPlugin, { tracing: config.tracing });
  await app.register(errorsPlugin, { clock });
  await app.register(arrivalPlugin, { api: { basePath, countRefusal } });
  await app.register(shutdownPlugin);
  await app.register(protocolAnswersPlugin);
  await app.register(corsPlugin, { origins: config.corsOrigins, policy: corsPolicy(doc, basePath) });
  await app.register(requestLogPlugin);
  await app.register(metricsPlugin, {
    enabled: config.metrics.enabled,
    operations: [...operationsById(doc).keys()],
    plans: enumValues(doc, 'Plan'),
    listener: { host: config.metrics.host, port: config.metrics.port, token: config.metrics.token },
  });
  await app.register(databasePlugin, { config });
  // Identification and counting: what the API's gate (api/gate.ts) runs, also for router errors under /v1.
  // Authentication asks a key store of its own shape (auth/keyStore.ts); the accounts repository is it.
  await app.register(authenticationPlugin, { clock, keys: accountsRepository });
  await app.register(accountsPlugin);
  await app.register(rateLimitPlugin, { config, clock });
  // Background work, beside the API that enqueues: the job queue and scheduler (jobs/), webhook delivery in it
  // (webhooks/; its workers stop, finishing what they hold, within a delivery's timeout and 5 s), and the sweeps.
  await app.register(jobsPlugin, { config, clock, stopTimeoutMs: config.webhooks.timeoutMs + 5000 });
  await app.register(webhooksPlugin, { config });
  for (const { queue, cron, run } of serviceSchedules(app.database.pool, app.webhooks.outboxWritten)) await app.jobs.schedule(queue, cron, run);

  await app.register(healthPlugin);
  await app.register(docsPlugin, { doc, apiUrl: `${config.publicBaseUrl}${basePath}` });
  await app.register(apiPlugin, { prefix: basePath, doc, config, clock });

  await app.ready();
  return app;
}
