import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../src/ratelimit/memoryStore.js';
import { manualClock } from '../helpers/clock.js';

/** The in-process counters alone (pure logic, no server): windows, refusals, bans, seeding. */
describe('the in-process rate-limit store', () => {
  const quota = { perMinute: 3, perDay: 5 };
  const ban = { after: 2, seconds: 600, graceMs: 2000 };
  const DAY_START = Date.UTC(2026, 10, 22); // 00:00:00 UTC

  it('counts both windows, refuses past the minute quota, and starts the next minute from 0 but not the day', () => {
    const clock = manualClock(DAY_START + 5_000);
    const store = createMemoryStore(clock.now);
    const outcomes = () => Array.from({ length: 4 }, () => store.hit('key:1', quota, ban)).map((h) => [h.outcome, h.minuteCount, h.dayCount]);
    expect(outcomes()).toEqual([
      ['allowed', 1, 1],
      ['allowed', 2, 2],
      ['allowed', 3, 3],
      ['limited', 3, 3],
    ]);
    clock.advance(60_000); // the next minute
    expect(outcomes()).toEqual([
      ['allowed', 1, 4],
      ['allowed', 2, 5],
      ['limited', 2, 5], // the day's quota is spent
      ['limited', 2, 5],
    ]);
    clock.set(DAY_START + 86_400_000 + 5_000); // the next day
    expect(store.hit('key:1', quota, ban)).toMatchObject({ outcome: 'allowed', minuteCount: 1, dayCount: 1 });
    // Other subjects are counted apart.
    expect(store.peek('key:2')).toMatchObject({ minuteCount: 0, dayCount: 0 });
  });

  it('refuses a burst without banning it, and bans a caller that keeps sending past the grace', () => {
    const clock = manualClock(DAY_START + 5_000);
    const store = createMemoryStore(clock.now);
    for (let i = 0; i < 3; i++) store.hit('ip:a', quota, ban);
    // A burst within the grace: refused, never toward a ban.
    expect(Array.from({ length: 10 }, () => store.hit('ip:a', quota, ban).outcome)).toEqual(Array(10).fill('limited'));
    clock.advance(2_000); // the grace is over: refusals count
    expect(Array.from({ length: 4 }, () => store.hit('ip:a', quota, ban)).map((h) => [h.outcome, h.banTtl])).toEqual([
      ['limited', 0],
      ['limited', 0],
      ['ban-started', 600],
      ['banned', 600],
    ]);
    // Banned past the minute's end, with what is left of the ban.
    clock.advance(100_000);
    expect(store.hit('ip:a', quota, ban)).toMatchObject({ outcome: 'banned', banTtl: 500 });
    clock.advance(500_000);
    expect(store.hit('ip:a', quota, ban).outcome).toBe('allowed');
  });

  it('starts a subject from seeded counts (Redis counts before an outage) and goes on from them', () => {
    const clock = manualClock(DAY_START + 5_000);
    const store = createMemoryStore(clock.now);
    store.seed('key:9', { now: Math.floor(clock.now() / 1000), minuteCount: 2, dayCount: 4 });
    expect(store.peek('key:9')).toMatchObject({ minuteCount: 2, dayCount: 4 });
    expect(store.hit('key:9', quota, ban)).toMatchObject({ outcome: 'allowed', minuteCount: 3, dayCount: 5 });
    expect(store.hit('key:9', quota, ban).outcome).toBe('limited');
  });
});
