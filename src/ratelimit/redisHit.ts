import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import { projectRoot } from '../paths.js';
import type { RedisConnection } from './redisConnection.js';
import { DAY, MINUTE, windowEnd, type BanPolicy, type HitResult, type Quota } from './store.js';

export const luaScript = (name: string) => readFileSync(path.join(projectRoot, 'src', 'ratelimit', name), 'utf8');

/** A subject's Redis keys in the windows containing `nowMs`: one hash tag, so one cluster slot. */
export function redisKeys(prefix: string, subject: string, nowMs: number) {
  const tagged = `${prefix}{${subject}}`;
  const minute = Math.floor(nowMs / 1000 / MINUTE);
  const day = Math.floor(nowMs / 1000 / DAY);
  return { minute: `${tagged}:m:${minute}`, day: `${tagged}:d:${day}`, ban: `${tagged}:ban`, refused: `${tagged}:r:${minute}`, firstRefusal: `${tagged}:f:${minute}` };
}

type Answer = [HitResult['outcome'], number, number, number, number, number];
type WithHit = RedisConnection['client'] & { rateLimitHit(...args: (string | number)[]): Promise<Answer> };

/**
 * Counting in Redis: hit.lua checks the ban and both windows in one atomic round trip, and
 * for a busy key far from its limits reserves up to `batch` requests, which this instance
 * then admits without asking (counted in Redis already, so a quota is never exceeded).
 */
export function createRedisHit(connection: RedisConnection, opts: { prefix: string; batch: number; clock: Clock }) {
  const redis = connection.client as WithHit;
  redis.defineCommand('rateLimitHit', { numberOfKeys: 5, lua: luaScript('hit.lua') });
  // Requests reserved in Redis by this instance and not yet used, per subject, until its windows' end (a second early).
  const reservations = new LRUCache<string, { left: number; minuteCount: number; dayCount: number; windowEnd: number }>({ max: 10_000 });

  return {
    /** A request admitted from this subject's reservation, if it has one left. */
    reserved(subject: string): HitResult | undefined {
      const r = reservations.get(subject);
      const nowMs = opts.clock();
      if (!r || r.left <= 0 || nowMs >= (r.windowEnd - 1) * 1000) return undefined;
      r.left--;
      return { outcome: 'allowed', minuteCount: r.minuteCount - r.left, dayCount: r.dayCount - r.left, now: Math.floor(nowMs / 1000), banTtl: 0 };
    },

    /** Sends the hit; `granted` is how many requests Redis counted (this one and those reserved). */
    send(subject: string, quota: Quota, ban: BanPolicy): Promise<Answer> {
      const nowMs = opts.clock();
      const k = redisKeys(opts.prefix, subject, nowMs);
      return redis.rateLimitHit(k.minute, k.day, k.ban, k.refused, k.firstRefusal, quota.perMinute, quota.perDay, ban.after, ban.seconds, opts.batch, nowMs, ban.graceMs);
    },

    /** This request's result from Redis's answer, keeping what it reserved beyond this request. */
    received(subject: string, [outcome, minuteCount, dayCount, now, banTtl, granted]: Answer): HitResult {
      if (granted <= 1) return { outcome, minuteCount, dayCount, now, banTtl };
      const ends = Math.min(windowEnd(now, MINUTE), windowEnd(now, DAY));
      const current = reservations.get(subject);
      const left = (current?.windowEnd === ends ? current.left : 0) + granted - 1;
      reservations.set(subject, { left, minuteCount, dayCount, windowEnd: ends });
      // Counted as if the reserved requests came after this one.
      return { outcome, minuteCount: minuteCount - left, dayCount: dayCount - left, now, banTtl };
    },
  };
}
