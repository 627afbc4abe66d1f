import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';

type Level = 'error' | 'warn' | 'info';

export interface FaultLog {
  /**
   * One occurrence of `fault` (the line's message). The first writes a line at once; after
   * that, at most one line per interval, with `count`: the occurrences since the last line.
   * `fields` are the latest occurrence's (never a stack: a count of them says more).
   */
  report(fault: string, fields?: Record<string, unknown>, level?: Level): void;
  /** Writes the counts not written yet (of `fault`, or of every fault): when it is over, or at close. */
  flush(fault?: string): void;
}

/**
 * Log lines for faults that repeat with the traffic (a database outage answers every request
 * 503): without this an outage writes a line per request, and the log grows with the load
 * exactly when someone needs to read it. pino has no such rate limit of its own.
 */
export function createFaultLog(log: FastifyBaseLogger, clock: Clock, intervalMs: number): FaultLog {
  const faults = new Map<string, { lastLineAt: number; pending: number; fields?: Record<string, unknown>; level: Level }>();
  const write = (fault: string, now: number) => {
    const state = faults.get(fault)!;
    log[state.level]({ ...state.fields, count: state.pending }, fault);
    Object.assign(state, { lastLineAt: now, pending: 0 });
  };
  return {
    report(fault, fields, level = 'warn') {
      const state = faults.get(fault) ?? { lastLineAt: -Infinity, pending: 0, level };
      faults.set(fault, Object.assign(state, { pending: state.pending + 1, fields, level }));
      const now = clock();
      if (now - state.lastLineAt >= intervalMs) write(fault, now);
    },
    flush(fault) {
      for (const [name, state] of faults) if ((fault === undefined || fault === name) && state.pending > 0) write(name, clock());
    },
  };
}
