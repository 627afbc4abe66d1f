// `npm start`'s check before it compiles (scripts/prestart.mjs): the configuration, the embedded
// store's owner and the ports, told in seconds rather than after a compile that can take a minute.
// The server checks the same again when it starts (src/server.ts).
import { loadConfig } from '../src/config.js';
import { checkBeforeStart, failToStart } from '../src/process/startup.js';

try {
  await checkBeforeStart(loadConfig());
} catch (err) {
  failToStart(err, { logLevel: process.env.LOG_LEVEL });
}
