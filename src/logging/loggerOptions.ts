import type { LoggerOptions } from 'pino';
import type { Config } from '../config.js';
import { stdoutDestination } from './stdout.js';

/**
 * JSON lines on stdout through pino's own destination, written synchronously and never waiting
 * for stdout (stdout.ts). `pretty` hands the lines to pino-pretty, for a developer's terminal.
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
  return { ...options, stream: stdoutDestination() };
}
