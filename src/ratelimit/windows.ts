/** Fixed windows aligned to UTC: the minute starts at second 0, the day at 00:00 UTC. */
export const MINUTE = 60;
export const DAY = 86_400;

/** Unix seconds at which the window of `length` seconds containing `now` ends. */
export const windowEnd = (now: number, length: number) => (Math.floor(now / length) + 1) * length;
