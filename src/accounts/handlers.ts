import type { Config } from '../config.js';
import type { Clock } from '../clock.js';
import { errors, insufficientScope } from '../errors/apiError.js';
import { MAX_LIVE_KEYS_PER_ACCOUNT } from '../limits.js';
import type { HandlersFor, ResourceUrls } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import { KeyChangeRefused, MANAGING_SCOPE, type AccountsRepository, type Scope } from './repository.js';

/** A key hands out only scopes it holds: the first it lacks, if any. */
const missingScope = (held: Scope[], asked: Scope[]) => asked.find((scope) => !held.includes(scope));

/** The answer for each refusal of the repository, naming the key. */
function refused(err: unknown, keyId: number): never {
  if (!(err instanceof KeyChangeRefused)) throw err;
  switch (err.reason) {
    case 'api_key_not_found':
      throw errors.api_key_not_found(`API key ${keyId} not found.`);
    case 'api_key_inactive':
      throw errors.api_key_inactive(`API key ${keyId} is revoked or expired; roll a live key, or create one.`);
    case 'last_key':
      throw errors.last_key(
        `API key ${keyId} is the account's last key that does not expire and holds ${MANAGING_SCOPE}, without which no key could manage the account's keys; create one (no expiresAt, with ${MANAGING_SCOPE}), or roll this one, first.`,
      );
    case 'too_many_api_keys':
      throw errors.too_many_api_keys(`The account already has ${MAX_LIVE_KEYS_PER_ACCOUNT} live API keys; revoke one first.`);
  }
}

/** The account operations by operationId, each on the calling key's own account. */
export function accountHandlers(deps: { accounts: AccountsRepository; urls: Pick<ResourceUrls, 'list'>; config: Pick<Config, 'rateLimits' | 'openOrders'>; clock: Clock }) {
  const { accounts, urls, config, clock } = deps;
  return {
    async getAccount(request) {
      const { perMinute, perDay, maxOpenOrders, ...account } = await accounts.getAccount(request.apiKey!.accountId);
      const rates = account.plan === 'enterprise' ? { perMinute: perMinute!, perDay: perDay! } : config.rateLimits.plans[account.plan];
      return { ...account, limits: { ...rates, openOrders: maxOpenOrders ?? config.openOrders[account.plan] } };
    },

    async listApiKeys(request, reply) {
      const query = request.query as PageQuery & typeof request.query;
      const page = await accounts.listKeys(request.apiKey!.accountId, { limit: query.limit, afterId: pageStart(query) });
      linkNextPage(reply, urls.list, query, page);
      return page.rows;
    },

    async createApiKey(request, reply) {
      const caller = request.apiKey!;
      const { name, scopes = caller.scopes, expiresAt } = request.body;
      const lacking = missingScope(caller.scopes, scopes);
      if (lacking) throw insufficientScope(lacking);
      if (expiresAt !== undefined && !(Date.parse(expiresAt) > clock())) throw errors.validation_failed('body/expiresAt must be in the future');
      const key = await accounts.createKey(caller.accountId, { name, scopes, expiresAt }).catch((err) => refused(err, 0));
      reply.code(201);
      return key!;
    },

    async rollApiKey(request, reply) {
      const caller = request.apiKey!;
      const { keyId } = request.params;
      const old = await accounts.getKey(caller.accountId, keyId);
      if (!old) throw errors.api_key_not_found(`API key ${keyId} not found.`);
      const lacking = missingScope(caller.scopes, old.scopes);
      if (lacking) throw insufficientScope(lacking);
      const key = await accounts.rollKey(caller.accountId, keyId, request.body?.expiresInSeconds ?? 86_400).catch((err) => refused(err, keyId));
      reply.code(201);
      return key;
    },

    async revokeApiKey(request, reply) {
      await accounts.revokeKey(request.apiKey!.accountId, request.params.keyId).catch((err) => refused(err, request.params.keyId));
      reply.code(204);
    },
  } satisfies HandlersFor<'getAccount' | 'listApiKeys' | 'createApiKey' | 'rollApiKey' | 'revokeApiKey'>;
}
