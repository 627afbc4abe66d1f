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

interface State {
  lastLineAt: number;
  pending: number;
  fields: Record<string, unknown> | undefined;
  level: Level;
}

/**
 * Log lines for faults that repeat with the traffic (a database outage answers every request
 * 503): without this an outage writes a line per request, and the log grows with the load
 * exactly when someone needs to read it.
 */
export function createFaultLog(log: FastifyBaseLogger, clock: Clock, intervalMs: number): FaultLog {
  const faults = new Map<string, State>();
  const write = (fault: string, state: State, now: number) => {
    log[state.level]({ ...state.fields, count: state.pending }, fault);
    state.lastLineAt = now;
    state.pending = 0;
  };
  return {
    report(fault, fields, level = 'warn') {
      let state = faults.get(fault);
      if (!state) faults.set(fault, (state = { lastLineAt: -Infinity, pending: 0, fields, level }));
      state.pending++;
      state.fields = fields;
      state.level = level;
      const now = clock();
      if (now - state.lastLineAt >= intervalMs) write(fault, state, now);
    },
    flush(fault) {
      const now = clock();
      for (const [name, state] of faults) if ((fault === undefined || fault === name) && state.pending > 0) write(name, state, now);
    },
  };
}
