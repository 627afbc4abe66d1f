/** What a rate-limit store counts against (ratelimit/store.ts): a plan's or an account's limits, as configured (config.ts). */
export interface Quota {
  perMinute: number;
  perDay: number;
}
