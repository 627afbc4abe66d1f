import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { loadConfig, type Config } from './config.js';
import { onStdoutGone } from './logging/stdout.js';
import { offerDevelopmentKey } from './process/developmentKey.js';
import { checkBeforeStart, failToStart } from './process/startup.js';

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

// SIGHUP: the terminal the server was started in closed (the kernel's hangup); a stop like any other.
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
/** The stop's cause when stdout went away (a terminal that closed, a pipe nobody reads): no signal. */
const STDOUT_GONE = 'stdout gone';
/** npm forwards a process group's signal to the server, which then hears it twice: the same signal again this soon is that echo. */
const ECHO_MS = 1000;

let config: Config | undefined;
try {
  config = loadConfig();
  // The store's owner and the ports before the database: told at once, not after a first start's migrations.
  await checkBeforeStart(config);
  const app = await buildApp(config);

  // Stops on a signal, an uncaught error or an empty event loop: the drain, then close (process/shutdown.ts); exit 0, or 1 past the grace.
  const { drainSeconds, graceSeconds } = config.shutdown;
  let stop: { signal: string; at: number } | undefined;
  const { close } = closeWithGrace(
    {
      delay: (drainSeconds + graceSeconds) * 1000,
      // close-with-grace exits 1 on any second signal, and npm's echo is one: SIGTERM, SIGINT and SIGHUP are handled below.
      skip: [...STOP_SIGNALS],
      logger: app.log,
      onTimeout: () => app.log.error({ graceSeconds }, 'requests in flight did not finish in time; exiting'),
    },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'uncaught error: shutting down');
      app.log.info({ signal: signal ?? stop?.signal, drainSeconds }, 'draining before shutdown');
      await app.shutdown(drainSeconds * 1000);
    },
  );
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      const at = performance.now();
      if (!stop) {
        stop = { signal, at };
        close();
      } else if (signal === stop.signal && at - stop.at < ECHO_MS) {
        app.log.info(`${signal} again within ${ECHO_MS} ms: the same request (a process group's signal, forwarded by npm), not a second one`);
      } else if (signal === 'SIGHUP' && stop.signal === STDOUT_GONE) {
        // The terminal's hangup, which its stdout told first.
      } else {
        app.log.warn(`${signal}: a second signal, exiting without finishing the drain`);
        process.exit(1);
      }
    });
  }

  // stdout gone for good (EIO, EPIPE): whoever started the server is gone with it, so it stops as on SIGHUP.
  onStdoutGone(() => {
    if (stop) return;
    stop = { signal: STDOUT_GONE, at: performance.now() };
    close();
  });

  await app.listen({ port: config.port, host: config.host });

  await offerDevelopmentKey(app, config.publicBaseUrl);
} catch (err) {
  // The raw variable: when the configuration itself is invalid, there is no config.logLevel.
  failToStart(err, { logLevel: config?.logLevel ?? process.env.LOG_LEVEL, address: config && { host: config.host, port: config.port } });
}
