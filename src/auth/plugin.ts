import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { errors, serviceUnavailable } from '../errors/apiError.js';
import { KEY_INDEX_REFRESH_MS } from '../limits.js';
import { bearerKey, hashApiKey } from './apiKey.js';
import { apiKeysRepository, type ApiKeyIdentity, type ApiKeysRepository } from './apiKeys.js';
import { startKeyIndex } from './keyIndex.js';
import { createKeyVerifier } from './keyVerifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key behind the request, when it carried a valid one. */
    apiKey?: ApiKeyIdentity;
    /** What the Authorization header held: nothing usable, a bad key, or a valid key. */
    credentials?: 'missing' | 'invalid' | 'valid';
  }
  interface FastifyInstance {
    /** API keys in the database: create, list, revoke (the CLI and tests use it too). */
    apiKeys: ApiKeysRepository;
    /**
     * Works out who is calling (request.apiKey, request.credentials): nothing to wait for
     * without a well-formed key, else a promise; a key that cannot be checked because the
     * database is down rejects with a 503.
     */
    identifyCaller(request: FastifyRequest): void | Promise<void>;
  }
}

export const REALM = 'animal-store';

/** Route-level check for operations secured by bearerAuth: runs after identification and counting, before the body is read. */
export function requireApiKey(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (request.apiKey) return done();
  if (request.credentials === 'invalid') {
    return done(errors.unauthorized('Invalid API key: it is malformed, unknown or revoked.', { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"` }));
  }
  done(errors.unauthorized('Missing API key. Send it as "Authorization: Bearer <API_KEY>".', { 'www-authenticate': `Bearer realm="${REALM}"` }));
}

/**
 * The key store, the index of issued keys, the key cache, and identification (the API's gate
 * calls it first thing, see api/gate.ts) without deciding whether it is enough: each
 * operation's security does that. Failing database reads are logged when they start failing
 * and when they work again, not once per attempt.
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, opts: { clock: Clock }) {
    const repository = apiKeysRepository(app.database.pool);
    const index = await startKeyIndex({
      changesSince: (since) => repository.changesSince(since),
      intervalMs: KEY_INDEX_REFRESH_MS,
      onHealth: (err) =>
        err
          ? app.log.warn({ err: (err as Error).message }, 'reading API key changes failed: keys not seen before answer 503 until it works')
          : app.log.info('reading API key changes works again'),
    });
    app.addHook('onClose', async () => index.stop());
    app.decorate('apiKeys', {
      ...repository,
      // A key made here is accepted here at once, not at the index's next refresh.
      async create(options) {
        const created = await repository.create(options);
        index.add(hashApiKey(created.key));
        return created;
      },
    } satisfies ApiKeysRepository);

    let lookupsFailing = false;
    const verify = createKeyVerifier({
      lookup: (hash) =>
        repository.authenticate(hash).then(
          (identity) => {
            if (lookupsFailing) app.log.info('verifying API keys works again');
            lookupsFailing = false;
            return identity;
          },
          (err: Error) => {
            if (!lookupsFailing) app.log.warn({ err: err.message }, 'verifying API keys failed: keys answer 503 until it works');
            lookupsFailing = true;
            throw err;
          },
        ),
      mayExist: (hash) => index.has(hash),
      clock: opts.clock,
    });

    app.decorateRequest('apiKey', undefined);
    app.decorateRequest('credentials', undefined);
    app.decorate('identifyCaller', (request: FastifyRequest): void | Promise<void> => {
      const key = bearerKey(request.headers.authorization);
      request.credentials = key === 'missing' ? 'missing' : 'invalid'; // until proven otherwise
      if (key === 'missing' || key === 'malformed') return;
      return verify(key).then(
        (identity) => {
          if (!identity) return;
          request.apiKey = identity;
          request.credentials = 'valid';
        },
        (err: unknown) => {
          throw isDatabaseUnavailable(err) ? serviceUnavailable() : err;
        },
      );
    });
  },
  { name: 'authentication', dependencies: ['database'] },
);
