import closeWithGrace from 'close-with-grace';
import { buildApp } from '../app.js';
import type { Config } from '../config.js';

/** Builds the app, listens, and shuts down gracefully on SIGTERM/SIGINT: one server process (or cluster worker). */
export async function serve(config: Config): Promise<void> {
  const app = await buildApp(config);

  // Stop taking connections, let requests in flight finish (bounded), close the database, exit 0.
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, closing');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });

  await app.listen({ port: config.port, host: config.host });

  if (app.database.kind === 'embedded' && (await app.apiKeys.count()) === 0) {
    // First start of a fresh embedded store: hand the developer a key, once, on the terminal (not in the logs).
    const { key } = await app.apiKeys.create({ plan: 'free', name: 'development key' });
    process.stdout.write(
      `\nCreated a development API key (free plan). It is shown only this once:\n\n  ${key}\n\n` +
        `Try it:  curl -H "Authorization: Bearer ${key}" ${config.publicBaseUrl}/v1/pets\n` +
        `Docs:    ${config.publicBaseUrl}/docs\n\n`,
    );
  }
}
