/**
 * Each endpoint's limit of deliveries in flight at once, adapted to how it answers (additive increase,
 * multiplicative decrease, as TCP and Netflix's concurrency-limits do): an attempt that fails, or that
 * succeeds slower than `slowMs`, halves it (at least 1); a prompt success raises it by one, up to `max`.
 * So slow successes, slow failures and answers that alternate with timeouts all shorten an endpoint's
 * leash, and an endpoint that answers promptly again gets its full limit back within `max` deliveries.
 * Kept per instance: the breaker (delivery.ts) and pg-boss's group count bound the fleet.
 */
export function endpointLimits(max: number, slowMs: number) {
  const reduced = new Map<number, number>();
  return {
    of: (endpointId: number) => reduced.get(endpointId) ?? max,
    record(endpointId: number, attempt: { ok: boolean; durationMs: number }) {
      const current = reduced.get(endpointId) ?? max;
      const next = attempt.ok && attempt.durationMs <= slowMs ? current + 1 : Math.max(1, Math.floor(current / 2));
      if (next >= max) reduced.delete(endpointId);
      else reduced.set(endpointId, next);
    },
  };
}
