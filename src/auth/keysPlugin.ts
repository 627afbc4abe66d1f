import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import { apiKeysRepository, type ApiKeysRepository } from './apiKeys.js';
import { createKeyVerifier, type KeyVerifier } from './keyVerifier.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** API keys in the database: create, list, revoke (the CLI and tests use it too). */
    apiKeys: ApiKeysRepository;
    /** Verifies keys with a short-lived cache in front of the database. */
    keyVerifier: KeyVerifier;
  }
}

/** The key store and its cached verifier, shared by every scope that authenticates. */
export default fp(
  async function apiKeysPlugin(app: FastifyInstance, opts: { clock: Clock }) {
    const apiKeys = apiKeysRepository(app.database.pool);
    app.decorate('apiKeys', apiKeys);
    app.decorate(
      'keyVerifier',
      createKeyVerifier({
        lookup: (hash) => apiKeys.authenticate(hash),
        onRefreshError: (err) => app.log.warn({ err }, 'background API key refresh failed'),
        now: opts.clock,
      }),
    );
  },
  { name: 'api-keys', dependencies: ['database'] },
);
