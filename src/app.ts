import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { createKeyVerifier } from './auth/keyVerifier.js';
import type { Config } from './config.js';
import { openDatabase, type Database } from './db/database.js';
import { clientErrorHandler } from './http/clientError.js';
import { requestId } from './http/requestId.js';
import { loadDocument } from './openapi/document.js';
import { registerApi } from './plugins/api.js';
import { registerDocs } from './plugins/docs.js';
import { registerErrorHandler } from './plugins/errorHandler.js';
import { registerHealth } from './plugins/health.js';
import { registerRateLimit } from './plugins/rateLimit.js';
import { registerRequestLog } from './plugins/requestLog.js';
import { BODY_LIMIT, registerJsonBody } from './plugins/jsonBody.js';
import { registerSecurityHeaders } from './plugins/securityHeaders.js';
import { registerValidation } from './plugins/validation.js';
import { createMemoryStore } from './ratelimit/memoryStore.js';
import { createRedisStore } from './ratelimit/redisStore.js';
import { apiKeysRepository, type ApiKeysRepository } from './repositories/apiKeys.js';
import { petsRepository, type PetsRepository } from './repositories/pets.js';

declare module 'fastify' {
  interface FastifyInstance {
    database: Database;
    apiKeys: ApiKeysRepository;
  }
}

/**
 * server.close() only drops connections idle at that moment; a keep-alive connection
 * whose request finishes later would hold shutdown open until its idle timeout.
 */
function closeKeepAliveConnectionsOnShutdown(app: FastifyInstance): void {
  app.addHook('preClose', async () => {
    const timer = setInterval(() => app.server.closeIdleConnections(), 50).unref();
    app.server.once('close', () => clearInterval(timer));
  });
}

/** Idempotency keys are kept 24 hours; older ones are deleted hourly, and once at start. */
function scheduleIdempotencyExpiry(app: FastifyInstance, pets: PetsRepository): void {
  const expire = () =>
    pets.expireIdempotencyKeys(24).catch((err) => app.log.warn({ err }, 'expiring idempotency keys failed'));
  void expire();
  const timer = setInterval(expire, 60 * 60 * 1000).unref();
  app.addHook('onClose', async () => clearInterval(timer));
}

/** Builds the whole service, ready to listen. The database is opened here and closed with the app. */
export async function buildApp(config: Config): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      // Nothing logs request headers (see requestLog.ts); this is the safety net if something ever does.
      redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], censor: '[redacted]' },
    },
    // Fastify's two lines per request are replaced by one (plugins/requestLog.ts).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestId,
    trustProxy: config.trustProxy,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    clientErrorHandler,
  });

  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: config.dbPoolMax,
    embeddedMode: 'serve',
    onIdleError: (err) => app.log.warn({ err }, 'idle database connection lost'),
  });
  app.addHook('onClose', () => database.close());
  closeKeepAliveConnectionsOnShutdown(app);

  const apiKeys = apiKeysRepository(database.pool);
  app.decorate('database', database);
  app.decorate('apiKeys', apiKeys);

  const store = config.redisUrl ? createRedisStore(config.redisUrl, app.log, { prefix: config.redisPrefix, batch: config.rateLimits.redisBatch }) : createMemoryStore();
  app.addHook('onClose', () => store.close());

  const doc = loadDocument();
  registerRequestLog(app);
  registerValidation(app);
  registerJsonBody(app);
  registerErrorHandler(app);
  registerSecurityHeaders(app);
  registerRateLimit(app, {
    store,
    ...config.rateLimits,
    verifier: createKeyVerifier({
      lookup: (hash) => apiKeys.authenticate(hash),
      onRefreshError: (err) => app.log.warn({ err }, 'background API key refresh failed'),
    }),
  });
  registerHealth(app, database.pool, store);
  await registerDocs(app, doc, config.publicBaseUrl);
  const pets = petsRepository(database.pool);
  await registerApi(app, { doc, pets, publicBaseUrl: config.publicBaseUrl });
  scheduleIdempotencyExpiry(app, pets);
  await app.ready();
  return app;
}
