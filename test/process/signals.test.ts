import { describe, expect, it } from 'vitest';
import { REPEAT_WINDOW_MS, signalCounter } from '../../src/process/signals.js';

describe('what a stop signal asks for', () => {
  const counter = () => {
    let t = 0;
    const classify = signalCounter(() => t);
    return { classify, at: (ms: number) => (t = ms) };
  };

  it('takes the same signal again within the window as the first one forwarded (a process group under npm)', () => {
    const { classify, at } = counter();
    expect(classify('SIGTERM')).toBe('stop');
    at(3); // npm's forward, milliseconds later
    expect(classify('SIGTERM')).toBe('repeat');
    at(REPEAT_WINDOW_MS - 1);
    expect(classify('SIGTERM')).toBe('repeat'); // a slow forward, within the window
    at(REPEAT_WINDOW_MS);
    expect(classify('SIGTERM')).toBe('hurry');
  });

  it('takes a second signal seconds later as a request to hurry, and a third as one to exit now', () => {
    const { classify, at } = counter();
    expect(classify('SIGTERM')).toBe('stop');
    at(2500);
    expect(classify('SIGTERM')).toBe('hurry');
    at(2502);
    expect(classify('SIGTERM')).toBe('repeat');
    at(6000);
    expect(classify('SIGTERM')).toBe('exit');
  });

  it('counts a different signal as a new one, however soon', () => {
    const { classify, at } = counter();
    expect(classify('SIGINT')).toBe('stop');
    at(1);
    expect(classify('SIGTERM')).toBe('hurry');
  });

  it('measures the window from the signal that counted, so one sent every half second still hurries', () => {
    const { classify, at } = counter();
    const meanings = [0, 500, 1000, 1500, 2000].map((t) => (at(t), classify('SIGINT')));
    expect(meanings).toEqual(['stop', 'repeat', 'hurry', 'repeat', 'exit']);
  });
});
