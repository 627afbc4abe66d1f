/**
 * What the index of issued API keys (src/auth/keyIndex.ts) holds in memory for `n` keys:
 * heap in use after loading them, less before. Run with --expose-gc (npm run bench does).
 */
import { createHash, randomBytes } from 'node:crypto';
import { startKeyIndex } from '../src/auth/keyIndex.js';

export async function keyIndexMemory(n: number): Promise<{ keys: number; bytes: number; bytesPerKey: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('keyIndexMemory needs node --expose-gc');
  const hashes = Array.from({ length: n }, () => createHash('sha256').update(randomBytes(32)).digest('hex'));
  gc();
  const before = process.memoryUsage().heapUsed;
  const index = await startKeyIndex({
    changesSince: async () => ({ asOf: new Date(), active: hashes, revoked: [] }),
    intervalMs: 60_000,
    onHealth: () => {},
  });
  index.stop();
  gc();
  // The hashes themselves are alive in both readings: the difference is the index alone.
  const bytes = process.memoryUsage().heapUsed - before;
  if (hashes.length !== n) throw new Error('unreachable');
  for (const hash of hashes) if (!(await index.has(hash))) throw new Error(`the index lacks a key of the ${n}`);
  return { keys: n, bytes, bytesPerKey: bytes / n };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await keyIndexMemory(Number(process.argv[2] ?? 1_000_000));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
