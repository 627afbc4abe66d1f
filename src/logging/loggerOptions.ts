import pino, { type LoggerOptions } from 'pino';
import type { Config } from '../config.js';

/**
 * JSON lines on stdout through pino's own asynchronous destination (sonic-boom: lines that
 * arrive while a write is under way go out together in the next; pino flushes what is left
 * when the process exits, a crash included). `pretty` hands the lines to pino-pretty, for a
 * developer's terminal.
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
  return { ...options, stream: pino.destination({ dest: 1, sync: false }) };
}
