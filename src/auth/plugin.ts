import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { errors, serviceUnavailable } from '../errors/apiError.js';
import { bearerKey } from './apiKey.js';
import type { ApiKeyIdentity } from './apiKeys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key behind the request, when it carried a valid one. */
    apiKey?: ApiKeyIdentity;
    /** What the Authorization header held: nothing usable, a bad key, or a valid key. */
    credentials?: 'missing' | 'invalid' | 'valid';
  }
  interface FastifyInstance {
    /**
     * Works out who is calling (request.apiKey, request.credentials). Returns nothing when
     * the answer was at hand (a cached key: the usual request), else a promise; a key that
     * cannot be checked because the database is down rejects with a 503.
     */
    identifyCaller(request: FastifyRequest): void | Promise<void>;
  }
}

export const REALM = 'animal-store';

const missingApiKey = () =>
  errors.unauthorized('Missing API key. Send it as "Authorization: Bearer <API_KEY>".', {
    'www-authenticate': `Bearer realm="${REALM}"`,
  });

const invalidApiKey = () =>
  errors.unauthorized('Invalid API key: it is malformed, unknown or revoked.', {
    'www-authenticate': `Bearer realm="${REALM}", error="invalid_token"`,
  });

/** Route-level check for operations secured by bearerAuth: runs after identification and counting, before the body is read. */
export function requireApiKey(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (request.apiKey) return done();
  done(request.credentials === 'invalid' ? invalidApiKey() : missingApiKey());
}

/**
 * Identification, for the scope that registers it (the API's gate calls it first thing, see
 * api/gate.ts), without deciding whether it is enough: each operation's security does that.
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance) {
    app.decorateRequest('apiKey', undefined);
    app.decorateRequest('credentials', undefined);

    const identified = (request: FastifyRequest, identity: ApiKeyIdentity | null | undefined) => {
      if (!identity) return;
      request.apiKey = identity;
      request.credentials = 'valid';
    };

    app.decorate('identifyCaller', (request: FastifyRequest): void | Promise<void> => {
      const key = bearerKey(request.headers.authorization);
      if (key === 'missing') {
        request.credentials = 'missing';
        return;
      }
      request.credentials = 'invalid'; // until proven otherwise
      if (key === 'malformed') return;
      const cached = app.keyVerifier.cachedAnswer(key);
      if (cached !== undefined) return identified(request, cached);
      return app.keyVerifier.verify(key).then(
        (identity) => identified(request, identity),
        (err: unknown) => {
          throw isDatabaseUnavailable(err) ? serviceUnavailable() : err;
        },
      );
    });
  },
  { name: 'authentication', dependencies: ['api-keys'] },
);
