/** Milliseconds since the Unix epoch. Injected through buildApp so tests move time instead of waiting. */
export type Clock = () => number;

export const systemClock: Clock = Date.now;
