import responseValidation from '@fastify/response-validation';
import type { FastifyInstance } from 'fastify';
import { accountHandlers } from '../accounts/handlers.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { notFound } from '../errors/plugin.js';
import { eventHandlers, seriesBoundSeconds } from '../events/handlers.js';
import { eventsRepository } from '../events/repository.js';
import { operationsById, type OpenApiDocument } from '../openapi/document.js';
import type { OperationHandlers, OperationId, ResourceUrls } from '../openapi/operationTypes.js';
import { orderHandlers } from '../orders/handlers.js';
import { ordersRepository } from '../orders/repository.js';
import { petHandlers } from '../pets/handlers.js';
import { petsRepository } from '../pets/repository.js';
import { webhookHandlers } from '../webhooks/handlers.js';
import { webhooksRepository } from '../webhooks/repository.js';
import { apiGate } from './gate.js';
import { registerJsonBody } from './jsonBody.js';
import { methodNotAllowedRoutes } from './methodNotAllowed.js';
import { operationRoutes } from './routes.js';
import { makeAjv, registerValidation } from './validation.js';

/** Methods that change nothing: no write, no webhook. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Registered with `prefix`: the API's base path from openapi.yaml's servers (`app.prefix` here). */
export interface ApiOptions {
  doc: OpenApiDocument;
  config: Config;
  clock: Clock;
}

/**
 * The versioned API, one encapsulated scope: everything registered here (and only here)
 * goes through its gate (gate.ts: never cached, authenticated, counted against its quota),
 * then is validated against openapi.yaml and answered with JSON. Unknown paths and methods inside it are
 * answered within the scope, so they are counted too.
 */
export default async function apiPlugin(app: FastifyInstance, opts: ApiOptions): Promise<void> {
  const { doc, config } = opts;
  registerValidation(app);
  registerJsonBody(app);
  // Bodies are written with JSON.stringify, not a serializer compiled from the document's
  // response schemas: repositories return exactly the document's fields, so the bytes are the
  // same, at ~5 KB less allocation per listPets page. The tests hold every body to the
  // document (RESPONSE_VALIDATION=true in test servers).
  app.setSerializerCompiler(() => JSON.stringify);

  if (config.responseValidation) {
    // Before the routes: it hooks each route as it is added. Bodies only; the tests check headers too.
    await app.register(responseValidation, { ajv: makeAjv({ useDefaults: false }) as never });
  }
  app.addHook('onRequest', apiGate(app));
  // A change that succeeded has committed, and may have put delivery intents in the webhook outbox (events/sql.ts):
  // this instance's dispatcher makes them jobs now (webhooks/outbox.ts; a run that finds none is one cheap read).
  app.addHook('onResponse', async (request, reply) => {
    if (!SAFE_METHODS.has(request.method) && reply.statusCode < 300) app.webhooks.outboxWritten();
  });

  // Absolute URLs the API hands out (Location, Link): the public origin, the base path, an operation's path.
  const operations = operationsById(doc);
  const urlOf = (operationId: string) => `${config.publicBaseUrl}${app.prefix}${operations.get(operationId)!.path}`;
  // Built once: handlers only append an id or a query.
  const resourceUrls = (item: OperationId, list: OperationId): ResourceUrls => {
    const [head, tail] = urlOf(item).split(/\{\w+\}/) as [string, string];
    const listUrl = urlOf(list);
    return { item: (id) => `${head}${id}${tail}`, list: (query) => `${listUrl}?${query}` };
  };
  const pool = app.database.pool;
  const events = eventsRepository(pool, app.jobs.boss);
  const deliveriesUrl = urlOf('listWebhookDeliveries');
  const orders = ordersRepository(pool, events, { holdSeconds: config.orderHoldSeconds, clock: opts.clock });
  const handlers = {
    ...petHandlers({ pets: petsRepository(pool, events, { clock: opts.clock, releaseLapsedHold: orders.releaseLapsedHold }), urls: resourceUrls('getPet', 'listPets') }),
    ...orderHandlers({ orders, urls: resourceUrls('getOrder', 'listOrders'), openOrders: config.openOrders }),
    ...eventHandlers({ events, listUrl: (query) => `${urlOf('listEvents')}?${query}`, seriesBoundSeconds: seriesBoundSeconds(config.webhooks) }),
    ...webhookHandlers({
      webhooks: webhooksRepository(pool, app.webhooks.secrets),
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      urls: { list: (query) => `${urlOf('listWebhookEndpoints')}?${query}`, deliveries: (id, query) => `${deliveriesUrl.replace('{endpointId}', String(id))}?${query}` },
    }),
    ...accountHandlers({ accounts: app.accounts, urls: { list: (query) => `${urlOf('listApiKeys')}?${query}` }, config, clock: opts.clock }),
  } satisfies OperationHandlers;
  await operationRoutes(app, { doc, handlers, urlOf });
  methodNotAllowedRoutes(app, doc);
  app.setNotFoundHandler(notFound);
}
