import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { LRUCache } from 'lru-cache';
import type { components } from '../../generated/openapi.js';
import type { Clock } from '../clock.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { insufficientScope, invalidKey, missingKey, serviceUnavailable, type ApiError } from '../errors/apiError.js';
import { KEY_CACHE_TTL_MS, KEY_INDEX_REFRESH_MS, KEY_USAGE_FLUSH_MS } from '../limits.js';
import { bearerKey, hashApiKey } from './apiKey.js';
import { startKeyIndex } from './keyIndex.js';
import type { ApiKeyIdentity, KeyStoreOn } from './keyStore.js';
import { startKeyUsage } from './keyUsage.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key behind the request, when it carried a valid one. */
    apiKey?: ApiKeyIdentity;
    /** What the Authorization header held: nothing usable, a bad key, or a valid key. */
    credentials?: 'missing' | 'invalid' | 'valid';
  }
  interface FastifyInstance {
    /** Tells this instance's index of issued keys of a key just made here, so it is accepted here at once (accounts/plugin.ts calls it). */
    keyIssued(secret: string): void;
    /** Writes the keys' pending lastUsedAt now rather than at the next flush (tests). */
    flushKeyUsage(): Promise<void>;
    /** Sets request.apiKey and request.credentials: at once without a well-formed key, else a promise (503 if the database is down). */
    identifyCaller(request: FastifyRequest): void | Promise<void>;
  }
}

/**
 * Whether the identified caller may use an operation secured by bearerAuth whose
 * `x-required-scope` is `scope`: the error to answer, if not (the API's gate asks, api/gate.ts).
 */
export function authorize(request: FastifyRequest, scope: components['schemas']['Scope']): ApiError | undefined {
  const key = request.apiKey;
  if (key) return key.scopes.includes(scope) ? undefined : insufficientScope(scope);
  return request.credentials === 'invalid' ? invalidKey() : missingKey();
}

/** Wraps a database read to log when it starts failing and when it works again, not once per attempt. */
function logFailures<A extends unknown[], T>(log: FastifyBaseLogger, read: (...args: A) => Promise<T>, failing: string, back: string) {
  let down = false;
  return (...args: A): Promise<T> =>
    read(...args).then(
      (value) => {
        if (down) log.info(back);
        down = false;
        return value;
      },
      (err: Error) => {
        if (!down) log.warn({ err: err.message }, failing);
        down = true;
        throw err;
      },
    );
}

/**
 * The key store, the index of issued keys, the cache of verified keys, and identification (the
 * API's gate calls it first thing, see api/gate.ts) without deciding whether it is enough: each
 * operation's security does that.
 */
export default fp(
  async function authenticationPlugin(app: FastifyInstance, opts: { clock: Clock; keys: KeyStoreOn }) {
    const repository = opts.keys(app.database.pool);
    const index = await startKeyIndex(
      logFailures(app.log, repository.changesSince, 'reading API key changes failed: keys not seen before answer 503 until it works', 'reading API key changes works again'),
      KEY_INDEX_REFRESH_MS,
    );
    const usage = startKeyUsage(repository.recordUse, KEY_USAGE_FLUSH_MS, (err) => app.log.warn({ err: err.message }, 'recording when API keys were last used failed'));
    app.addHook('onClose', async () => index.stop());
    // preClose: the last uses are written while the database (closed in its own onClose, which runs first) is still open.
    app.addHook('preClose', () => usage.stop());
    app.decorate('flushKeyUsage', usage.flush);
    // A key made here is accepted here at once, not at the index's next refresh.
    app.decorate('keyIssued', (secret: string) => index.add(hashApiKey(secret)));

    const lookup = logFailures(app.log, repository.authenticate, 'verifying API keys failed: keys answer 503 until it works', 'verifying API keys works again');
    // Keyed by the key itself, so a known key costs neither a hash nor a round trip. An answer older
    // than the ttl is looked up again before the request is answered, never served stale (a key idle
    // and revoked meanwhile would get one more answer): a revoked key stops working within the ttl.
    // A failed lookup drops the answer; false: no active key.
    const verified = new LRUCache<string, ApiKeyIdentity | false>({
      max: 10_000,
      ttl: KEY_CACHE_TTL_MS,
      ttlResolution: 0,
      perf: { now: opts.clock },
      fetchMethod: async (key) => (await lookup(hashApiKey(key))) ?? false,
    });
    /** A key without a fresh cached answer: refused without the database unless the index of issued keys has it. */
    async function verify(key: string): Promise<ApiKeyIdentity | undefined> {
      if (!(await index.has(hashApiKey(key)))) return undefined;
      return (await verified.fetch(key)) || undefined;
    }

    app.decorateRequest('apiKey', undefined);
    app.decorateRequest('credentials', undefined);
    app.decorate('identifyCaller', (request: FastifyRequest): void | Promise<void> => {
      const accept = (identity: ApiKeyIdentity | false | undefined) => {
        if (!identity) return;
        const now = opts.clock();
        if (identity.expiresAt !== null && identity.expiresAt <= now) return;
        request.apiKey = identity;
        request.credentials = 'valid';
        usage.seen(identity.id, now);
      };
      // The usual request: `Bearer <key>` with a fresh cached answer, taken at once (no parsing, no checksum, no promise);
      // only keys that passed bearerKey are ever cached.
      const header = request.headers.authorization;
      const cached = header?.startsWith('Bearer ') ? verified.get(header.slice(7)) : undefined;
      request.credentials = 'invalid'; // until proven otherwise
      if (cached !== undefined) return accept(cached);
      const key = bearerKey(header);
      if (key === 'missing') request.credentials = 'missing';
      if (key === 'missing' || key === 'malformed') return;
      return verify(key).then(
        accept,
        (err: unknown) => {
          throw isDatabaseUnavailable(err) ? serviceUnavailable() : err;
        },
      );
    });
  },
  { name: 'authentication', dependencies: ['database'] },
);
