import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Memory-backed where the machine has it: copying an embedded store there takes milliseconds, not a second. */
const base = existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();

/** A new empty directory for a throwaway database or data dir. */
export function scratchDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(base, prefix));
}
