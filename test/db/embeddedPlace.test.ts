import { chmod, mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../helpers/scratchDir.js';
import { closedFolderOnTheWay } from '../../src/db/embeddedPlace.js';

/* Whether the postgres user can reach a folder, judged as the kernel goes: through every folder on the way, links followed. */
describe('closedFolderOnTheWay', () => {
  it('names the first folder others cannot pass, for a path not made yet as for one that is; none on an open way', async () => {
    const base = await scratchDir('as-place-');
    const open = path.join(base, 'open');
    const closed = path.join(base, 'closed');
    await mkdir(path.join(open, 'data'), { recursive: true, mode: 0o755 });
    await mkdir(path.join(closed, 'inner'), { recursive: true });
    await chmod(open, 0o755);
    await chmod(closed, 0o700);
    await chmod(path.join(closed, 'inner'), 0o755);

    expect(closedFolderOnTheWay(path.join(open, 'data'))).toBeUndefined();
    expect(closedFolderOnTheWay(path.join(open, 'not', 'made', 'yet'))).toBeUndefined();
    expect(closedFolderOnTheWay(path.join(closed, 'inner', 'data'))).toBe(closed);
    expect(closedFolderOnTheWay(path.join(closed, 'not', 'made'))).toBe(closed);
    // The folder itself is not looked at: a data directory is handed to the postgres user.
    expect(closedFolderOnTheWay(closed)).toBeUndefined();

    // A link in the closed folder to an open one: its target's way is what counts.
    await symlink(path.join(open, 'data'), path.join(closed, 'data'));
    expect(closedFolderOnTheWay(path.join(closed, 'data'))).toBeUndefined();
    // A link in an open folder into the closed one: closed.
    await symlink(path.join(closed, 'inner'), path.join(open, 'inward'));
    expect(closedFolderOnTheWay(path.join(open, 'inward', 'data'))).toBe(closed);
  });
});
