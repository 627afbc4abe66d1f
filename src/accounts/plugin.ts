import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { accountsRepository, type AccountsRepository } from './repository.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Accounts and their API keys in the database (the account handlers, the CLI's and tests' door too); a key made here is accepted here at once. */
    accounts: AccountsRepository;
  }
}

/** The accounts repository, telling authentication (auth/plugin.ts, `keyIssued`) of each key it makes. */
export default fp(
  async function accountsPlugin(app: FastifyInstance) {
    const repository = accountsRepository(app.database.pool);
    // A key made here is accepted here at once, not at the index's next refresh.
    const indexed = <T extends { secret: string }>(key: T) => (app.keyIssued(key.secret), key);
    app.decorate('accounts', {
      ...repository,
      createAccount: async (...args) => {
        const created = await repository.createAccount(...args);
        indexed(created.key);
        return created;
      },
      createKey: async (...args) => {
        const key = await repository.createKey(...args);
        return key && indexed(key);
      },
      rollKey: async (...args) => indexed(await repository.rollKey(...args)),
    } satisfies AccountsRepository);
  },
  { name: 'accounts', dependencies: ['database', 'authentication'] },
);
