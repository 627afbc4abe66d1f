import pino, { type LoggerOptions } from 'pino';
import type { Config } from '../config.js';

/**
 * JSON lines on stdout through pino's own destination, written synchronously: with
 * `sync: false`, a write still in flight when the process exits lands after the lines flushed
 * at exit (test/logging/loggerOptions.test.ts saw line 0 last). `pretty` hands the lines to
 * pino-pretty, for a developer's terminal.
 */
export function loggerOptions(config: Pick<Config, 'logLevel' | 'logFormat'>, stream?: NodeJS.WritableStream) {
  const options: LoggerOptions = {
    level: config.logLevel,
    // Nothing logs request headers (see requestLog.ts); this is the safety net if something ever does.
    redact: { paths: ['req.headers.authorization', 'req.headers["x-api-key"]'], censor: '[redacted]' },
  };
  if (stream) return { ...options, stream };
  if (config.logFormat === 'pretty') {
    return { ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } };
  }
  // Lines are gathered up to 4 KiB and written synchronously (in order, whatever ends the process),
  // and at least once a second, so a quiet server's lines are not held back.
  const destination = pino.destination({ dest: 1, sync: true, minLength: 4096 });
  setInterval(() => destination.flush(), 1000).unref();
  // pino flushes only asynchronous destinations at exit; this one may hold up to 4 KiB.
  process.once('exit', () => destination.flushSync());
  return { ...options, stream: destination };
}
