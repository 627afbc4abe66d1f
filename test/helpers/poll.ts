import { setTimeout as sleep } from 'node:timers/promises';

/** Calls `check` every `intervalMs` until it returns true or `timeoutMs` has passed; returns whether it did. */
export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}
