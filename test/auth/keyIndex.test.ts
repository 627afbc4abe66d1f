import { afterEach, describe, expect, it, vi } from 'vitest';
import type { KeyChanges } from '../../src/accounts/repository.js';
import { startKeyIndex } from '../../src/auth/keyIndex.js';

afterEach(() => void vi.useRealTimers());

describe('the index of issued keys', () => {
  it('never refuses a live key because another key sharing its 52-bit hash prefix was revoked', async () => {
    const live = `0123456789abc${'a'.repeat(51)}`;
    const twin = `0123456789abc${'b'.repeat(51)}`;
    let changes: KeyChanges = { snapshot: '1:1:', active: [live, twin] };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const index = await startKeyIndex(async () => changes, 500);
    // The twin is revoked: the refreshes that follow see it no more, the live key not at all (unchanged).
    changes = { snapshot: '2:2:', active: [] };
    await vi.advanceTimersByTimeAsync(500);
    const answer = index.has(live);
    await vi.advanceTimersByTimeAsync(500);
    expect(await answer).toBe(true);
    // A key nobody issued is still refused (after the next refresh, without a lookup of its own).
    const madeUp = index.has(`fedcba9876543${'c'.repeat(51)}`);
    await vi.advanceTimersByTimeAsync(500);
    expect(await madeUp).toBe(false);
    index.stop();
  });
});
