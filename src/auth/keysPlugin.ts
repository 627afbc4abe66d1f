import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import { KEY_INDEX_REFRESH_MS } from '../limits.js';
import { hashApiKey } from './apiKey.js';
import { apiKeysRepository, type ApiKeysRepository } from './apiKeys.js';
import { createKeyIndex } from './keyIndex.js';
import { createKeyVerifier, type KeyVerifier } from './keyVerifier.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** API keys in the database: create, list, revoke (the CLI and tests use it too). */
    apiKeys: ApiKeysRepository;
    /** Verifies keys with a short-lived cache in front of the index of issued keys and the database. */
    keyVerifier: KeyVerifier;
  }
}

/**
 * The key store, the index of issued keys and the cached verifier, shared by every scope
 * that authenticates. Failing database reads are logged when they start failing and when
 * they work again, not once per attempt.
 */
export default fp(
  async function apiKeysPlugin(app: FastifyInstance, opts: { clock: Clock }) {
    const repository = apiKeysRepository(app.database.pool);
    const index = createKeyIndex({
      changesSince: (since) => repository.changesSince(since),
      intervalMs: KEY_INDEX_REFRESH_MS,
      onFailing: (err) => app.log.warn({ err: (err as Error).message }, 'reading API key changes failed: keys not seen before answer 503 until it works'),
      onRecovered: (failures) => app.log.info({ failures }, 'reading API key changes works again'),
    });
    await index.start();
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

    let refreshFailing = false;
    app.decorate(
      'keyVerifier',
      createKeyVerifier({
        lookup: async (hash) => {
          const identity = await repository.authenticate(hash);
          if (refreshFailing) app.log.info('verifying API keys works again');
          refreshFailing = false;
          return identity;
        },
        issued: index,
        onRefreshError: (err) => {
          if (!refreshFailing) app.log.warn({ err: (err as Error).message }, 'verifying API keys failed: cached keys are served until their answers expire');
          refreshFailing = true;
        },
        now: opts.clock,
      }),
    );
  },
  { name: 'api-keys', dependencies: ['database'] },
);
