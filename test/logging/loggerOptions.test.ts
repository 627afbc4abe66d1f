import { describe, expect, it } from 'vitest';
import { runScript } from '../helpers/processes.js';

// The service's real logger options in a process of their own: pino's asynchronous destination loses nothing when it ends.
describe('the logger', () => {
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
