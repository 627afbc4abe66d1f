import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { remember } from './cleanup.js';

/** Memory-backed where the machine has it. */
export const SCRATCH_BASE = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

/**
 * The variable naming the folder throwaway directories go into: a test run sets it to a
 * folder of its own (test/helpers/testRun.ts), so that removing that folder removes
 * everything the run made, whatever stopped it.
 */
export const SCRATCH_ROOT_VARIABLE = 'ANIMAL_STORE_SCRATCH_ROOT';

/** A new empty directory for a throwaway database or data dir (removed by a command's clean-up if still there, see cleanup.ts). */
let made = 0;
export async function scratchDir(prefix: string): Promise<string> {
  // Readable by others: run as root, the embedded PostgreSQL runs as the postgres user, who must reach a DATA_DIR in it.
  const making = mkdtemp(path.join(process.env[SCRATCH_ROOT_VARIABLE] || SCRATCH_BASE, prefix)).then(async (dir) => (await chmod(dir, 0o755), dir));
  // Noted before it exists: a clean-up while it is being made waits for its name.
  remember(`folder ${made++}`, `remove a ${prefix}… folder`, async () => {
    const dir = await making.catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return making;
}
