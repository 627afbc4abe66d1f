// Hand-built: no library (rate-limiter-flexible 11.4 tried: 1.8× the service's CPU per request) reserves requests in batches or carries counts across a Redis outage (a fallback seeded from Redis, handed back after).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { EventEmitter } from 'node:events';
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import { projectRoot } from '../paths.js';
import { createMemoryStore, type WindowCounts } from './memoryStore.js';
import { connectRedis, type RedisConnection } from './redisConnection.js';
import type { BanPolicy, HitResult, Quota, RateLimitStore } from './store.js';
import { DAY, MINUTE, windowEnd } from './windows.js';

const script = (name: string) => readFileSync(path.join(projectRoot, 'src', 'ratelimit', name), 'utf8');
/** How often Redis is probed while the breaker is open. */
const PROBE_INTERVAL_MS = 500;
/** How often a cluster's masters are checked while the breaker is closed (requests only reach some). */
const WATCH_INTERVAL_MS = 1000;

type RawResult = [HitResult['outcome'], number, number, number, number, number];
type RedisWithHit = RedisConnection['client'] & {
  rateLimitHit(...args: (string | number)[]): Promise<RawResult>;
  rateLimitFlush(key: string, delta: number, floor: number, ttl: number): Promise<number>;
};

/** Requests reserved in Redis by this instance and not yet used, for one subject in one window. */
interface Reservation {
  left: number;
  minuteCount: number;
  dayCount: number;
  /** When the reserving window ends, in Unix seconds and in ms (a second early, as windows are counted in whole seconds). */
  windowEnd: number;
  expiresAtMs: number;
}

/** A subject's counts when this instance fell back, to tell what it admitted on its own since. */
interface OutageStart extends WindowCounts {}

/** Rejects with `label` if `promise` has not settled within `ms`. */
function withDeadline<T>(promise: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(label)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Counters and bans in Redis (one node or a cluster, see redisUrl.ts), shared by every
 * instance. Windows follow the instances' clocks (keep them NTP-synchronised). Each
 * subject's keys share one hash tag and are all passed as KEYS, so a hit is one slot and
 * one round trip, also on a Redis Cluster.
 *
 * A request never waits for Redis longer than `timeoutMs`. Past it (or on any error) a
 * breaker opens: every request is counted by this instance alone, starting from the last
 * counts Redis gave for that subject, while Redis is probed in the background. When it
 * answers again, what this instance admitted meanwhile is added to Redis's counters and
 * the breaker closes. While open, a quota can be exceeded at most by what the other
 * instances admit on their own in the same window. On a cluster the breaker is one for
 * all masters: one master down opens it, and it closes when every master answers with
 * cluster_state:ok (with cluster-require-full-coverage, Redis's default, the cluster then
 * refuses every key anyway).
 */
export function createRedisStore(
  url: string,
  log: FastifyBaseLogger,
  opts: { prefix: string; timeoutMs?: number; batch?: number; clock?: Clock },
): RateLimitStore {
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? 150;
  const batch = opts.batch ?? 100;
  const reservations = new LRUCache<string, Reservation>({ max: 10_000 });
  const lastKnown = new LRUCache<string, WindowCounts>({ max: 50_000 });
  const connection = connectRedis(url, { timeoutMs });
  const redis = connection.client as RedisWithHit;
  redis.on('error', () => {}); // connection errors surface as failed hits, handled below
  redis.defineCommand('rateLimitHit', { numberOfKeys: 5, lua: script('hit.lua') });
  redis.defineCommand('rateLimitFlush', { numberOfKeys: 1, lua: script('flush.lua') });
  const fallback = createMemoryStore({ clock });
  const outage = new Map<string, OutageStart>();
  let probe: NodeJS.Timeout | undefined;
  let closed = false;
  // A cluster's per-master connections say nothing until used: check them all, so "shared" means they answer.
  let watching = false;
  const watch =
    connection.kind === 'cluster'
      ? setInterval(() => {
          if (probe || watching || redis.status !== 'ready') return;
          watching = true;
          withDeadline(connection.check(), timeoutMs * 2, 'Redis Cluster check timed out')
            .catch((err: Error) => openBreaker(err))
            .finally(() => (watching = false));
        }, WATCH_INTERVAL_MS).unref()
      : undefined;

  const keyOf = (subject: string) => {
    const tagged = `${opts.prefix}{${subject}}`; // one hash tag per subject: one cluster slot
    const now = Math.floor(clock() / 1000);
    const minute = Math.floor(now / MINUTE);
    return {
      minute: `${tagged}:m:${minute}`,
      day: `${tagged}:d:${Math.floor(now / DAY)}`,
      ban: `${tagged}:ban`,
      refused: `${tagged}:r:${minute}`,
      firstRefusal: `${tagged}:f:${minute}`,
    };
  };

  function openBreaker(err: Error): void {
    if (probe || closed) return;
    log.warn({ err: err.message }, 'Redis unavailable: rate limits fall back to this instance');
    probe = setInterval(() => void tryToClose(), PROBE_INTERVAL_MS);
    probe.unref();
  }

  let probing = false;
  async function tryToClose(): Promise<void> {
    if (probing) return;
    probing = true;
    try {
      await withDeadline(connection.check(), timeoutMs * 2, 'Redis probe timed out');
      await withDeadline(flushOutage(), timeoutMs * 4, 'Redis flush timed out');
      clearInterval(probe);
      probe = undefined;
      log.info('Redis is back: rate limits are shared again');
    } catch {
      // still down: the next probe tries again
    } finally {
      probing = false;
    }
  }

  /** Adds to Redis what this instance admitted on its own during the outage, in the windows still current. */
  async function flushOutage(): Promise<void> {
    const flushes: Promise<number>[] = [];
    for (const [subject, start] of outage) {
      const current = fallback.peek(subject);
      const k = keyOf(subject);
      const sameMinute = Math.floor(current.now / MINUTE) === Math.floor(start.now / MINUTE);
      const sameDay = Math.floor(current.now / DAY) === Math.floor(start.now / DAY);
      const minuteDelta = current.minuteCount - (sameMinute ? start.minuteCount : 0);
      const dayDelta = current.dayCount - (sameDay ? start.dayCount : 0);
      if (minuteDelta > 0) flushes.push(redis.rateLimitFlush(k.minute, minuteDelta, current.minuteCount, 2 * MINUTE));
      if (dayDelta > 0) flushes.push(redis.rateLimitFlush(k.day, dayDelta, current.dayCount, 2 * DAY));
    }
    await Promise.all(flushes);
    outage.clear();
  }

  /** Counts locally, starting a subject's outage from the last counts Redis gave for it. */
  function hitLocally(subject: string, quota: Quota, ban: BanPolicy): HitResult {
    if (!outage.has(subject)) {
      const known = lastKnown.get(subject);
      const now = Math.floor(clock() / 1000);
      if (known && Math.floor(known.now / DAY) === Math.floor(now / DAY)) {
        fallback.seed(subject, {
          now,
          minuteCount: Math.floor(known.now / MINUTE) === Math.floor(now / MINUTE) ? known.minuteCount : 0,
          dayCount: known.dayCount,
        });
      }
      outage.set(subject, fallback.peek(subject));
    }
    return fallback.hitSync(subject, quota, ban);
  }

  /** Keeps `left` reserved requests for this subject, adding to any left from the same window. */
  function reserve(subject: string, hit: HitResult, left: number): HitResult {
    const ends = Math.min(windowEnd(hit.now, MINUTE), windowEnd(hit.now, DAY));
    const current = reservations.get(subject);
    const kept = current && current.windowEnd === ends ? current.left : 0;
    reservations.set(subject, {
      left: kept + left,
      minuteCount: hit.minuteCount,
      dayCount: hit.dayCount,
      windowEnd: ends,
      expiresAtMs: (ends - 1) * 1000,
    });
    // Counted as if the reserved requests came after this one.
    const unused = kept + left;
    return { ...hit, minuteCount: hit.minuteCount - unused, dayCount: hit.dayCount - unused };
  }

  function useReservation(r: Reservation): HitResult {
    r.left--;
    return { outcome: 'allowed', minuteCount: r.minuteCount - r.left, dayCount: r.dayCount - r.left, now: Math.floor(clock() / 1000), banTtl: 0 };
  }

  /** One round trip: the script counts (and reserves a batch) in Redis. */
  async function hitInRedis(subject: string, quota: Quota, ban: BanPolicy): Promise<HitResult> {
    const k = keyOf(subject);
    const call = redis.rateLimitHit(k.minute, k.day, k.ban, k.refused, k.firstRefusal, quota.perMinute, quota.perDay, ban.after, ban.seconds, batch, clock(), ban.graceMs);
    try {
      const [outcome, minuteCount, dayCount, now, banTtl, granted] = await withDeadline(call, timeoutMs, `Redis did not answer within ${timeoutMs} ms`);
      lastKnown.set(subject, { now, minuteCount, dayCount });
      if (granted > 1) return reserve(subject, { outcome, minuteCount, dayCount, now, banTtl }, granted - 1);
      return { outcome, minuteCount, dayCount, now, banTtl };
    } catch (err) {
      openBreaker(err as Error);
      const local = hitLocally(subject, quota, ban);
      // Answered late after all: Redis counted this request too, so the outage must not hand it back again.
      call.then(([, , , , , granted]) => {
        const start = outage.get(subject);
        if (start && granted > 0) {
          start.minuteCount += granted;
          start.dayCount += granted;
        }
      }, () => {});
      return local;
    }
  }

  return {
    hit(subject, quota, ban) {
      const reserved = reservations.get(subject);
      if (reserved && reserved.left > 0 && clock() < reserved.expiresAtMs) return useReservation(reserved);
      if (probe || !connection.isReady()) {
        if (!probe) openBreaker(new Error(`connection ${redis.status}`));
        return hitLocally(subject, quota, ban);
      }
      return hitInRedis(subject, quota, ban);
    },
    async ready() {
      if (!connection.isReady()) {
        const connected = new Promise<void>((resolve) => (redis as EventEmitter).once('ready', () => resolve()));
        await withDeadline(connected, 2000, 'Redis not reachable at start');
      }
      if (connection.kind === 'node') return;
      // Every master answers (and is connected before the first request), or the store starts degraded.
      await withDeadline(connection.check(), 2000, 'Redis Cluster not answering at start').catch((err: Error) => {
        openBreaker(err);
        throw err;
      });
    },
    mode: () => (probe || !connection.isReady() ? 'local-fallback' : 'shared'),
    async close() {
      closed = true;
      clearInterval(probe);
      clearInterval(watch);
      redis.disconnect();
    },
  };
}
