// Hand-built: no library (rate-limiter-flexible 11.4 tried: 1.8× the service's CPU per request) reserves requests in batches or carries counts across a Redis outage.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { createBreaker, withDeadline } from './breaker.js';
import { createFallback } from './fallback.js';
import { connectRedis } from './redisConnection.js';
import { createRedisHit, redisKeys } from './redisHit.js';
import type { RateLimitStore } from './store.js';

/**
 * Counters and bans in Redis (one node or a cluster, see configParts/redisUrl.ts), shared by every
 * instance; windows follow the instances' clocks (keep them NTP-synchronised). A request
 * never waits for Redis longer than `timeoutMs`: past it, or on any error, the breaker opens
 * and this instance counts alone (fallback.ts) until Redis answers again. Meanwhile a quota
 * can be exceeded at most by what the other instances admit on their own in the same window.
 */
export async function createRedisStore(
  url: string,
  log: FastifyBaseLogger,
  opts: { prefix: string; timeoutMs: number; batch: number; clock: Clock; onFallbackAdmitted(): void },
): Promise<RateLimitStore> {
  const connection = connectRedis(url, { timeoutMs: opts.timeoutMs });
  const { client } = connection;
  client.on('error', () => {}); // connection errors surface as failed hits, handled below
  const redisHit = createRedisHit(connection, opts);
  const fallback = createFallback(connection, { prefix: opts.prefix, clock: opts.clock, onAdmitted: opts.onFallbackAdmitted });
  const breaker = createBreaker(connection, { timeoutMs: opts.timeoutMs, log, recover: fallback.reconcile });

  try {
    if (client.status !== 'ready') await withDeadline(new Promise((resolve) => client.once('ready', resolve)), 2000, 'Redis not reachable at start');
    // Every master of a cluster answers (and is connected before the first request), or the store starts degraded.
    await withDeadline(connection.check(), 2000, 'Redis not answering at start');
  } catch (err) {
    breaker.open(err as Error);
    log.warn({ err: (err as Error).message }, 'starting with per-instance rate limits until Redis answers');
  }

  return {
    hit(subject, quota, ban) {
      const reserved = redisHit.reserved(subject);
      if (reserved) return reserved;
      if (breaker.isOpen()) {
        breaker.open(new Error(`connection ${client.status}`));
        return fallback.hit(subject, quota, ban);
      }
      const sent = redisHit.send(subject, quota, ban);
      return withDeadline(sent, opts.timeoutMs, `Redis did not answer within ${opts.timeoutMs} ms`).then(
        (answer) => {
          fallback.remember(subject, { now: answer[3], minuteCount: answer[1], dayCount: answer[2] });
          return redisHit.received(subject, answer);
        },
        (err: Error) => {
          breaker.open(err);
          const local = fallback.hit(subject, quota, ban);
          sent.then(([, , , , , granted]) => fallback.countedLate(subject, granted), () => {});
          return local;
        },
      );
    },
    peek(subject) {
      if (breaker.isOpen()) return fallback.peek(subject);
      const nowMs = opts.clock();
      const k = redisKeys(opts.prefix, subject, nowMs);
      // Read only: a failed peek leaves the breaker to the hits, and answers this instance's own counts.
      return withDeadline(client.mget(k.minute, k.day), opts.timeoutMs, `Redis did not answer within ${opts.timeoutMs} ms`).then(
        ([minute, day]) => ({ now: Math.floor(nowMs / 1000), minuteCount: Number(minute ?? 0), dayCount: Number(day ?? 0) }),
        () => fallback.peek(subject),
      );
    },
    mode: () => (breaker.isOpen() ? 'local-fallback' : 'shared'),
    async close() {
      breaker.stop();
      client.disconnect();
    },
  };
}
