import { afterEach, describe, expect, it, vi } from 'vitest';
import { runScript } from '../helpers/processes.js';
import { batchedLines } from '../../src/logging/batchedLines.js';

function recordingSink() {
  const writes: string[] = [];
  let syncFlushes = 0;
  return {
    writes,
    syncFlushes: () => syncFlushes,
    sink: { write: (chunk: string) => writes.push(chunk), flushSync: () => void syncFlushes++ },
  };
}

describe('batchedLines', () => {
  afterEach(() => vi.useRealTimers());

  it('holds lines until a batch is full, then writes them as one chunk, in order', () => {
    const { sink, writes } = recordingSink();
    const out = batchedLines(sink, { bytes: 10, flushMs: 250 });
    out.write('aaaa\n');
    out.write('bbbb\n'.slice(0, 4));
    expect(writes).toEqual([]);
    out.write('cc\n'); // 5 + 4 + 3 = 12 characters: over 10
    expect(writes).toEqual(['aaaa\nbbbbcc\n']);
    out.write('dd\n');
    expect(writes).toHaveLength(1);
    out.flush();
    expect(writes).toEqual(['aaaa\nbbbbcc\n', 'dd\n']);
  });

  it('writes a partial batch flushMs after its first line, not before', () => {
    vi.useFakeTimers();
    const { sink, writes } = recordingSink();
    const out = batchedLines(sink, { bytes: 4096, flushMs: 250 });
    out.write('first\n');
    vi.advanceTimersByTime(200);
    out.write('second\n'); // does not restart the batch's deadline
    vi.advanceTimersByTime(49);
    expect(writes).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(writes).toEqual(['first\nsecond\n']);
    vi.advanceTimersByTime(10_000);
    expect(writes).toHaveLength(1);
  });

  it('flush(cb) (pino\'s logger.flush) calls back once the sink has flushed what was held', () => {
    const events: string[] = [];
    const sink = {
      write: (chunk: string) => void events.push(`write ${chunk}`),
      flush: (cb: () => void) => {
        events.push('sink flush');
        cb();
      },
      flushSync: () => {},
    };
    const out = batchedLines(sink, { bytes: 4096, flushMs: 250 });
    out.write('held\n');
    out.flush(() => events.push('called back'));
    expect(events).toEqual(['write held\n', 'sink flush', 'called back']);
  });

  it('flushSync writes what is held and flushes the sink', () => {
    const { sink, writes, syncFlushes } = recordingSink();
    const out = batchedLines(sink, { bytes: 4096, flushMs: 250 });
    out.write('held\n');
    out.flushSync();
    expect(writes).toEqual(['held\n']);
    expect(syncFlushes()).toBe(1);
  });

  // The service's real logger options in a process of their own: nothing held is lost when it ends.
  it.each([
    ['process.exit()', 'exit', 0],
    ['an uncaught exception', 'throw', 1],
  ])('a process that ends with %s has written every line', async (_what, how, code) => {
    const result = await runScript('test/logging/fixtures/logThenExit.ts', ['25', how], { NODE_ENV: 'production' });
    expect(result.code).toBe(code);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as { i: number; msg: string });
    expect(lines.map((l) => l.i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
  });
});
