import type { FastifyInstance, FastifyRequest } from 'fastify';
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
export async function requireApiKey(request: FastifyRequest): Promise<void> {
  if (request.apiKey) return;
  throw request.credentials === 'invalid' ? invalidApiKey() : missingApiKey();
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

    app.addHook('onRequest', async (request) => {
      const parsed = parseAuthorization(request.headers.authorization);
      if (parsed.kind === 'missing') {
        request.credentials = 'missing';
        return;
      }
      request.credentials = 'invalid'; // until proven otherwise
      if (parsed.kind !== 'key') return;
      if (!app.keyVerifier.answersAtOnce(parsed.key) && !throttle.mayLookUp(request.ip)) return;
      let identity: ApiKeyIdentity | undefined;
      try {
        identity = await app.keyVerifier.verify(parsed.key);
      } catch (err) {
        if (!isDatabaseUnavailable(err)) throw err;
        throw serviceUnavailable();
      }
      if (identity) {
        request.apiKey = identity;
        request.credentials = 'valid';
      }
    });
  },
  { name: 'authentication', dependencies: ['api-keys'] },
);
