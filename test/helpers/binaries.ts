import { access, constants } from 'node:fs/promises';
import path from 'node:path';

/** The executable `name` on PATH or in /usr/sbin, /usr/local/sbin (where Debian puts daemons, and a non-root PATH may not look). */
export async function findBinary(name: string): Promise<string | undefined> {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean), '/usr/sbin', '/usr/local/sbin'];
  for (const dir of dirs) {
    const file = path.join(dir, name);
    if (await access(file, constants.X_OK).then(() => true, () => false)) return file;
  }
  return undefined;
}
