import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { errors, serviceUnavailable } from '../errors/apiError.js';
import { parseAuthorization } from './apiKey.js';
import type { ApiKeyIdentity } from './apiKeys.js';
import { createLookupThrottle, type LookupThrottle } from './lookupThrottle.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key behind the request, when it carried a valid one. */
    apiKey?: ApiKeyIdentity;
    /** What the Authorization header held: nothing usable, a bad key, or a valid key. */
    credentials?: 'missing' | 'invalid' | 'valid';
  }
  interface FastifyInstance {
    /** Tells authentication which addresses the rate limiter is refusing. */
    keyLookupThrottle: LookupThrottle;
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
 * Works out who is calling, first thing for every request of the scope it is registered
 * in, without deciding whether that is enough (each operation's security does that). A
 * key that cannot be checked because the database is down is answered 503 here, before
 * any counting: it is not an anonymous request.
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, opts: { clock: Clock }) {
    const throttle = createLookupThrottle(opts.clock);
    app.decorate('keyLookupThrottle', throttle);
    app.decorateRequest('apiKey', undefined);
    app.decorateRequest('credentials', undefined);

    const identify = (request: FastifyRequest, identity: ApiKeyIdentity | undefined) => {
      if (!identity) return;
      request.apiKey = identity;
      request.credentials = 'valid';
    };

    // Callback style: a known key (the usual request) is answered from the cache without a promise.
    app.addHook('onRequest', (request, _reply, done) => {
      const parsed = parseAuthorization(request.headers.authorization);
      if (parsed.kind === 'missing') {
        request.credentials = 'missing';
        return done();
      }
      request.credentials = 'invalid'; // until proven otherwise
      if (parsed.kind !== 'key') return done();
      const cached = app.keyVerifier.cachedAnswer(parsed.key);
      if (cached) {
        identify(request, cached.identity);
        return done();
      }
      if (!throttle.mayLookUp(request.ip)) return done();
      app.keyVerifier.verify(parsed.key).then(
        (identity) => {
          identify(request, identity);
          done();
        },
        (err: unknown) => done(isDatabaseUnavailable(err) ? serviceUnavailable() : (err as Error)),
      );
    });
  },
  { name: 'authentication', dependencies: ['api-keys'] },
);
