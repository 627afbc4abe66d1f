import type { Clock } from '../../src/clock.js';

export interface ManualClock {
  /** The clock to hand to buildApp (through startTestServer). */
  now: Clock;
  /** Moves time forward by `ms`. */
  advance(ms: number): void;
  /** Sets the time (ms since the epoch). */
  set(ms: number): void;
}

/**
 * A clock that moves only when told, so tests never wait on the wall clock. Starts at
 * `startMs`; by default second 5 of the current UTC minute, far from a window boundary,
 * and close enough to real time that Redis key expiries and database timestamps agree.
 */
export function manualClock(startMs = Math.floor(Date.now() / 60_000) * 60_000 + 5_000): ManualClock {
  let t = startMs;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
    set: (ms) => {
      t = ms;
    },
  };
}
