import { existsSync, statSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runScript } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';

/*
 * Run as root, the embedded PostgreSQL runs as the postgres user (src/db/embeddedPlace.ts). A DATA_DIR
 * set on purpose inside a folder that user cannot enter is refused in one sentence, before anything
 * is made; the folder's mode is left as it was. (The checkout's own ./data there is the long group's
 * quick start, test/long/quickstart.test.ts.)
 */
describe.runIf(process.getuid?.() === 0)('as root, a DATA_DIR the postgres user cannot reach', () => {
  it('is refused in one sentence naming it, the folder in the way and what to do; exit 1, no stack, nothing made', async () => {
    const parent = path.join(await scratchDir('as-private-'), 'private');
    await mkdir(parent, { mode: 0o700 });
    await chmod(parent, 0o700);
    const dataDir = path.join(parent, 'store', 'data');
    const res = await runScript('src/server.ts', [], { DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0' });
    expect(res.code, res.stderr).toBe(1);
    expect(res.stderr).toBe(
      `DATA_DIR (${dataDir}) is inside ${parent}, which the postgres user cannot enter, and run as root the embedded PostgreSQL runs as that user: ` +
        'set DATA_DIR to a folder it can reach (for example under /var/lib), leave DATA_DIR unset to keep the store in ./data (then a link to a folder made for it in /var/lib/animal-store), or set DATABASE_URL to use another Postgres.\n',
    );
    expect(res.stdout).toBe('');
    expect(existsSync(path.join(parent, 'store'))).toBe(false);
    expect(statSync(parent).mode & 0o777).toBe(0o700);
  });
});
