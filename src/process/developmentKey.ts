import type { FastifyInstance } from 'fastify';

/**
 * A fresh embedded store has no key: at a terminal, make one for the developer and show it once;
 * otherwise say how to make one. Never into a log (a container's stdout is its log).
 */
export async function offerDevelopmentKey(app: FastifyInstance, publicBaseUrl: string): Promise<void> {
  if (app.database.kind !== 'embedded' || (await app.accounts.countKeys()) > 0) return;
  if (!process.stdout.isTTY) {
    process.stdout.write('No API key yet. Create one with: npm run --silent apikey -- create --plan free\n');
    return;
  }
  const { key } = await app.accounts.createAccount({ plan: 'free', name: 'development' });
  process.stdout.write(
    `\nCreated a development account (free plan) and its API key. The key is shown only this once:\n\n  ${key.secret}\n\n` +
      `Try it:  curl -H "Authorization: Bearer ${key.secret}" ${publicBaseUrl}/v1/pets\n` +
      `Docs:    ${publicBaseUrl}/docs\n\n`,
  );
}
