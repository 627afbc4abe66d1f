import cluster from 'node:cluster';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from '../app.js';
import type { Config } from '../config.js';
import { waitForPort } from './portKeeper.js';
import { onStopSignals } from './signals.js';

/**
 * Builds the app, listens, and stops gracefully on SIGTERM/SIGINT: one server process
 * (or cluster worker). The stop: readiness fails and responses close their connections
 * at once; the listener keeps serving for the drain, so a load balancer has time to
 * notice; then it closes, requests in flight finish (bounded by the grace), the pool
 * and Redis close, and the process exits 0. A second signal cuts the drain short (the same
 * signal again within a second is the first one forwarded, see signals.ts).
 */
export async function serve(config: Config): Promise<void> {
  const app = await buildApp(config);
  const { drainSeconds, graceSeconds } = config.shutdown;

  onStopSignals(async ({ signal }, hurry) => {
    app.log.info({ signal, drainSeconds }, 'draining before shutdown');
    app.startDrain();
    await Promise.race([sleep(drainSeconds * 1000, undefined, { ref: false }), hurry]);
    app.log.info({ graceSeconds }, 'closing: no new connections, finishing requests in flight');
    const overdue = setTimeout(() => {
      app.log.error({ graceSeconds }, 'requests in flight did not finish in time; exiting');
      process.exit(1);
    }, graceSeconds * 1000).unref();
    await app.close();
    clearTimeout(overdue);
  }, (message) => app.log.info(message));

  // A worker takes the port from the primary, which holds it while no worker listens.
  if (cluster.isWorker) await waitForPort(app.server);
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
