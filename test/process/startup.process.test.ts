import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { runScript, type RunResult } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { closedFolderOnTheWay } from '../../src/db/embeddedPlace.js';
import { projectRoot } from '../../src/paths.js';
import { postgresServerUrl } from '../helpers/services.js';
import { databaseName } from '../helpers/testDatabase.js';

/*
 * src/server.ts as `npm start` runs it, failing to start for each reason a newcomer meets:
 * one or two sentences on stderr naming the variable and what to do, exit code 1, and no
 * stack unless LOG_LEVEL=debug.
 */

/** The server with `env` (and nothing of this process's settings; its metrics listener on a free port), to its exit. */
const start = (env: Record<string, string>) => runScript('src/server.ts', [], { METRICS_PORT: '0', ...env }, 60_000);

function expectSentence(res: RunResult, words: RegExp) {
  expect(res.code, res.stderr).toBe(1);
  const lines = res.stderr.trim().split('\n');
  expect(lines, res.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(words);
  expect(res.stderr).not.toMatch(/^\s+at /m);
  expect(res.stdout).toBe('');
}

let dir: string;
beforeAll(async () => {
  dir = await scratchDir('as-startup-');
});

describe.concurrent('src/server.ts, failing to start', () => {
  it('TRUST_PROXY=yes: names TRUST_PROXY and what it allows', async () => {
    expectSentence(await start({ TRUST_PROXY: 'yes', PORT: '0' }), /^TRUST_PROXY must be true, false, or a comma-separated list of proxy addresses or CIDR ranges, for example TRUST_PROXY=10\.0\.0\.0\/8,127\.0\.0\.1; "yes" is none of these\.$/);
  });

  it('DATABASE_URL to a closed port: names DATABASE_URL and where it points', async () => {
    const closed = await freePort();
    expectSentence(
      await start({ DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/animals`, PORT: '0' }),
      new RegExp(`^Cannot connect to Postgres at 127\\.0\\.0\\.1:${closed} \\(DATABASE_URL\\): nothing accepts connections there\\. Start Postgres`),
    );
  });

  it('DATABASE_URL to an unknown host: names DATABASE_URL and the host', async () => {
    expectSentence(
      await start({ DATABASE_URL: 'postgres://postgres@no-such-host.invalid:5432/animals', PORT: '0' }),
      /^DATABASE_URL names the host "no-such-host\.invalid", which this machine cannot resolve\. Correct the host in DATABASE_URL/,
    );
  });

  it('DATABASE_URL to a missing database: names the database and how to create it', async () => {
    const url = new URL(postgresServerUrl());
    url.pathname = `/${databaseName('missing')}`;
    expectSentence(
      await start({ DATABASE_URL: url.toString(), PORT: '0' }),
      new RegExp(`^The database "${databaseName('missing')}" does not exist on the Postgres server at ${url.hostname.replace(/\./g, '\\.')}:${url.port || 5432} \\(DATABASE_URL\\)\\. Create it \\(createdb `),
    );
  });

  it('a DATA_DIR of the PGlite store of earlier versions: says to move it away', async () => {
    const dataDir = path.join(dir, 'pglite');
    await mkdir(path.join(dataDir, 'pgdata'), { recursive: true });
    expectSentence(
      await start({ DATA_DIR: dataDir, PORT: '0' }),
      new RegExp(`^DATA_DIR \\(${dataDir.replace(/[/.]/g, '\\$&')}\\) holds the PGlite store of an earlier version, which the embedded PostgreSQL cannot read: move it away \\(mv `),
    );
    expect(existsSync(path.join(dataDir, 'PG_VERSION'))).toBe(false);
  });

  it('an unwritable DATA_DIR: names DATA_DIR, the folder and what to do', async () => {
    const parent = path.join(dir, 'read-only');
    const dataDir = path.join(parent, 'data');
    const res = await startAsOtherUser({ DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0' }, parent);
    expectSentence(res, new RegExp(`^DATA_DIR \\(${dataDir.replace(/[/.]/g, '\\$&')}\\) cannot hold the embedded database: this user may not write there\\. Set DATA_DIR to a folder this user can write`));
  });

  describe('PORT in use', () => {
    let taken: net.Server;
    let port: number;
    beforeAll(async () => {
      taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      port = (taken.address() as net.AddressInfo).port;
    });
    afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

    it('METRICS_PORT in use: names METRICS_PORT, before the database is opened', async () => {
      const dataDir = path.join(dir, 'never-made-either');
      expectSentence(
        await start({ PORT: '0', METRICS_PORT: String(port), DATA_DIR: dataDir }),
        new RegExp(`^METRICS_PORT ${port} on 127\\.0\\.0\\.1 is already in use, most likely by another server\\. Stop it, or set METRICS_PORT to a free port`),
      );
      expect(existsSync(dataDir)).toBe(false);
    });

    it('names PORT, and is told before the database is opened (DATA_DIR is never made)', async () => {
      const dataDir = path.join(dir, 'never-made');
      expectSentence(await start({ PORT: String(port), DATA_DIR: dataDir }), new RegExp(`^PORT ${port} on 127\\.0\\.0\\.1 is already in use, most likely by another server\\. Stop it, or set PORT to a free port`));
      expect(existsSync(dataDir)).toBe(false);
    });
  });

  it('shows the stack as well at LOG_LEVEL=debug', async () => {
    const res = await start({ TRUST_PROXY: 'yes', PORT: '0', LOG_LEVEL: 'debug' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^TRUST_PROXY must be true, false/);
    expect(res.stderr).toMatch(/^StartupError: TRUST_PROXY must be/m);
    expect(res.stderr).toMatch(/^\s+at .*src\/config\.ts/m);
  });
});

/**
 * The server as a user who may not write in `readOnly` (made here): `nobody` when this runs as
 * root (root may write anywhere), else this user with the folder's write permission removed.
 */
async function startAsOtherUser(env: Record<string, string>, readOnly: string): Promise<RunResult> {
  await mkdir(readOnly);
  const root = process.getuid?.() === 0;
  await chmod(dir, 0o755); // reachable: what the test is about is the folder it may not write in
  await chmod(readOnly, root ? 0o755 : 0o555);
  // A checkout in a private folder (root's home), which nobody cannot read: root then, without the power to
  // write where it may not (CAP_DAC_OVERRIDE), in a folder of nobody's that nobody may not write either.
  const privateCheckout = root && closedFolderOnTheWay(path.join(projectRoot, 'src', 'server.ts')) !== undefined;
  if (privateCheckout) await chown(readOnly, 65534, 65534);
  const wrapper = !root ? [] : privateCheckout ? ['setpriv', '--bounding-set=-dac_override'] : ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups'];
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  return new Promise((resolve) => {
    const [file, ...args] = [...wrapper, process.execPath, '--import', 'tsx', 'src/server.ts'];
    execFile(file!, args, { cwd: projectRoot, env: { ...inherited, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ code: !err ? 0 : typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}
