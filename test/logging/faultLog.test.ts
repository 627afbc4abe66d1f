import type { FastifyBaseLogger } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createFaultLog } from '../../src/logging/faultLog.js';
import { manualClock } from '../helpers/clock.js';

/** A logger that keeps what it is asked to write (the fault log only calls a level method with fields and a message). */
function recorder() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  return { log: { warn: at('warn'), info: at('info'), error: at('error') } as unknown as FastifyBaseLogger, lines };
}

describe('the fault log', () => {
  it('writes the first occurrence at once, then at most one line per interval with the count since the last', () => {
    const clock = manualClock();
    const { log, lines } = recorder();
    const faults = createFaultLog(log, clock.now, 10_000);
    for (let i = 0; i < 600; i++) {
      faults.report('database down', { reqId: `r${i}` });
      clock.advance(25); // 40 a second for 15 s
    }
    expect(lines.map((l) => [l.msg, l.fields.count, l.fields.reqId])).toEqual([
      ['database down', 1, 'r0'],
      ['database down', 400, 'r400'], // the first at or after 10 s, counting the 399 between and itself
    ]);
    faults.flush();
    expect(lines.at(-1)).toMatchObject({ msg: 'database down', fields: { count: 199 } });
    faults.flush(); // nothing pending: nothing written
    expect(lines).toHaveLength(3);
  });

  it('keeps each fault apart, at its own level, and flushes one or all', () => {
    const clock = manualClock();
    const { log, lines } = recorder();
    const faults = createFaultLog(log, clock.now, 10_000);
    faults.report('a');
    faults.report('a');
    faults.report('b', {}, 'info');
    faults.report('b', {}, 'info');
    expect(lines.map((l) => `${l.level} ${l.msg} ${l.fields.count}`)).toEqual(['warn a 1', 'info b 1']);
    faults.flush('b');
    expect(lines.map((l) => `${l.level} ${l.msg} ${l.fields.count}`)).toEqual(['warn a 1', 'info b 1', 'info b 1']);
    faults.flush();
    expect(lines.at(-1)).toMatchObject({ level: 'warn', msg: 'a', fields: { count: 1 } });
  });
});
