import cluster from 'node:cluster';
import { loadConfig, type Config } from './config.js';
import { runPrimary } from './process/primary.js';
import { serve } from './process/serve.js';
import { checkListenable, failToStart } from './process/startup.js';

const USAGE = `Usage: npm start   (or: node dist/src/server.js; from source with restarts: npm run dev)

Starts the Animal Store service. It takes no arguments: environment variables configure it,
for example PORT (3000), HOST (127.0.0.1), DATABASE_URL (unset: the embedded store in
DATA_DIR, ./data) and LOG_LEVEL (info). Every variable: docs/CONFIGURATION.md.`;

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
if (args.length > 0) {
  process.stderr.write(`Unknown argument: ${args[0]}\n\n${USAGE}\n`);
  process.exit(2);
}

let config: Config | undefined;
try {
  config = loadConfig();
  // The ports before the database: a port in use is told at once, not after a first start's migrations.
  if (cluster.isPrimary) {
    await checkListenable({ host: config.host, port: config.port });
    const { enabled, host, port } = config.metrics;
    if (enabled) await checkListenable({ host, port, variables: { host: 'METRICS_HOST', port: 'METRICS_PORT' } });
  }
  // One process, or with WORKERS > 1 a primary that only supervises and workers that serve.
  if (config.workers > 1 && cluster.isPrimary) await runPrimary(config);
  else await serve(config);
} catch (err) {
  // The raw variable: when the configuration itself is invalid, there is no config.logLevel.
  failToStart(err, { logLevel: config?.logLevel ?? process.env.LOG_LEVEL, address: config && { host: config.host, port: config.port } });
}
