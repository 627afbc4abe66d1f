import cluster from 'node:cluster';
import { loadConfig, type Config } from './config.js';
import { runPrimary } from './process/primary.js';
import { serve } from './process/serve.js';

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  console.error(`Invalid configuration: ${(err as Error).message}`);
  process.exit(1);
}

// One process, or with WORKERS > 1 a primary that only supervises and workers that serve.
if (config.workers > 1 && cluster.isPrimary) await runPrimary(config);
else await serve(config);
