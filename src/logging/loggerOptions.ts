import pino, { type LoggerOptions } from 'pino';
import type { Config } from '../config.js';
import { batchedLines } from './batchedLines.js';

/**
 * Lines are written to stdout in batches of about this many characters, or after FLUSH_MS
 * at most. Each batch is one asynchronous write, handed to libuv's thread pool: on the
 * bench machine that hand-off cost the main thread about 3.8 µs per request with 4 KiB
 * batches (writeString in the profiles); 64 KiB batches make it about 16 times rarer, for
 * at most 64 KiB of lines held per process.
 * What is left is written on exit (a crash included); only a SIGKILL loses the last
 * FLUSH_MS of lines.
 */
const BUFFER_BYTES = 65_536;
const FLUSH_MS = 250;

/**
 * The logger every process builds the same way (so every worker writes the same format):
 * JSON lines on stdout by default, written asynchronously and in batches. `pretty` hands
 * the lines to pino-pretty, for a developer's terminal.
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
  return { ...options, stream: batchedLines(pino.destination({ dest: 1, sync: false }), { bytes: BUFFER_BYTES, flushMs: FLUSH_MS }) };
}
