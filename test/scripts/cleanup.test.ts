import { afterEach, describe, expect, it } from 'vitest';
import { forget, remember, undoAll } from '../helpers/cleanup.js';

describe("a command's clean-up registry", () => {
  afterEach(() => undoAll());

  it('undoes what is left, last made first, each once, even when one fails', async () => {
    const undone: string[] = [];
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((line: string) => (errors.push(line), true)) as typeof process.stderr.write;
    try {
      remember('a', 'drop database a', async () => undone.push('a'));
      remember('b', 'stop server b', async () => {
        undone.push('b');
        throw new Error('already gone');
      });
      remember('c', 'remove folder c', async () => undone.push('c'));
      forget('c'); // undone by its owner already
      remember('d', 'remove folder d', async () => undone.push('d'));
      await Promise.all([undoAll(), undoAll()]);
    } finally {
      process.stderr.write = write;
    }
    expect(undone).toEqual(['d', 'b', 'a']);
    expect(errors).toEqual(['clean-up: could not stop server b: already gone\n']);
  });

  it('also undoes what is noted while it runs (a start still in progress when Ctrl-C came)', async () => {
    const undone: string[] = [];
    remember('database', 'drop database', async () => {
      // Meanwhile the interrupted start makes a folder, and notes it.
      remember('folder', 'remove folder', async () => undone.push('folder'));
      undone.push('database');
    });
    await undoAll();
    expect(undone).toEqual(['database', 'folder']);
  });

  it('runs again for what is noted after a clean-up ended', async () => {
    const undone: string[] = [];
    remember('first', 'first', async () => undone.push('first'));
    await undoAll();
    remember('second', 'second', async () => undone.push('second'));
    await undoAll();
    expect(undone).toEqual(['first', 'second']);
  });
});
