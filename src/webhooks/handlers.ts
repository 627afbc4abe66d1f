import { errors } from '../errors/apiError.js';
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT } from '../limits.js';
import type { HandlersFor } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import { EndpointChangeRefused, type WebhooksRepository } from './repository.js';
import { checkTargetUrl, TargetNotAllowed } from './targets.js';

const endpointNotFound = (id: number) => errors.webhook_endpoint_not_found(`Webhook endpoint ${id} not found.`);

/** The webhook endpoint operations, each on the calling key's account's endpoints only. */
export function webhookHandlers(deps: {
  webhooks: WebhooksRepository;
  allowPrivateTargets: boolean;
  urls: { list: (query: string) => string; deliveries: (endpointId: number, query: string) => string };
}) {
  const { webhooks, allowPrivateTargets, urls } = deps;
  const checkUrl = (url: string) =>
    checkTargetUrl(url, allowPrivateTargets).catch((err: unknown) => {
      throw err instanceof TargetNotAllowed ? errors.webhook_url_not_allowed(err.message) : err;
    });

  return {
    async createWebhookEndpoint(request, reply) {
      await checkUrl(request.body.url);
      const endpoint = await webhooks.create(request.apiKey!.accountId, request.body).catch((err: unknown) => {
        throw err instanceof EndpointChangeRefused ? errors.too_many_webhook_endpoints(`The account already has ${MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`) : err;
      });
      reply.code(201);
      return endpoint;
    },

    async listWebhookEndpoints(request, reply) {
      const query = request.query as PageQuery & typeof request.query;
      const page = await webhooks.list(request.apiKey!.accountId, { limit: query.limit, afterId: pageStart(query) });
      linkNextPage(reply, urls.list, query, page);
      return page.rows;
    },

    async getWebhookEndpoint(request) {
      const endpoint = await webhooks.get(request.apiKey!.accountId, request.params.endpointId);
      if (!endpoint) throw endpointNotFound(request.params.endpointId);
      return endpoint;
    },

    async updateWebhookEndpoint(request) {
      const { endpointId } = request.params;
      // 404 before the URL check, so another account's endpoint is not probed through it.
      if (!(await webhooks.get(request.apiKey!.accountId, endpointId))) throw endpointNotFound(endpointId);
      if (request.body.url !== undefined) await checkUrl(request.body.url);
      const endpoint = await webhooks.update(request.apiKey!.accountId, endpointId, request.body);
      if (!endpoint) throw endpointNotFound(endpointId);
      return endpoint;
    },

    async deleteWebhookEndpoint(request, reply) {
      if (!(await webhooks.delete(request.apiKey!.accountId, request.params.endpointId))) throw endpointNotFound(request.params.endpointId);
      reply.code(204);
    },

    async rotateWebhookSecret(request) {
      const endpoint = await webhooks.rotateSecret(request.apiKey!.accountId, request.params.endpointId);
      if (!endpoint) throw endpointNotFound(request.params.endpointId);
      return endpoint;
    },

    async listWebhookDeliveries(request, reply) {
      const { endpointId } = request.params;
      if (!(await webhooks.get(request.apiKey!.accountId, endpointId))) throw endpointNotFound(endpointId);
      const query = request.query as PageQuery & typeof request.query;
      const page = await webhooks.deliveries(endpointId, { limit: query.limit, beforeId: pageStart(query) });
      linkNextPage(reply, (q) => urls.deliveries(endpointId, q), query, page);
      return page.rows;
    },
  } satisfies HandlersFor<
    'createWebhookEndpoint' | 'listWebhookEndpoints' | 'getWebhookEndpoint' | 'updateWebhookEndpoint' | 'deleteWebhookEndpoint' | 'rotateWebhookSecret' | 'listWebhookDeliveries'
  >;
}
