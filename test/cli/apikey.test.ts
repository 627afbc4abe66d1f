import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliDeps } from '../../scripts/apikey.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { manualClock } from '../helpers/clock.js';
import { waitFor } from '../helpers/poll.js';
import { runScript, type RunResult } from '../helpers/processes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer } from '../helpers/testServer.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

/** The script as its own process (through tsx, as npm runs it): for what only a real run shows. */
const spawnApikey = (...args: string[]) => runScript('scripts/apikey.ts', args, db.env);

/** Runs the command in this process, with output and exit code as a run of the script gives them. */
async function run(args: string[], deps: CliDeps): Promise<RunResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(args, { stdout: (line) => stdout.push(`${line}\n`), stderr: (line) => stderr.push(`${line}\n`) }, deps);
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}

/** The command in this process, on the test's database, opened as the script opens it from the environment. */
function apikey(...args: string[]): Promise<RunResult> {
  const config = loadConfig(db.env);
  return run(args, {
    openDatabase: () =>
      openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: 2, onIdleError: () => {} }),
  });
}

describe('npm run apikey', () => {
  let created: string;

  it('create prints the new key alone on the last line (run as a script)', async () => {
    const res = await spawnApikey('create', '--plan', 'pro', '--name', 'ci robot');
    expect(res.code).toBe(0);
    created = res.stdout.trim().split('\n').at(-1)!;
    expect(created).toMatch(/^as_[A-Za-z0-9_-]{43}$/);
  });

  it('a usage error exits 2 with the usage text (run as a script)', async () => {
    const res = await spawnApikey('create', '--plan', 'gold');
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('Usage:');
    expect(res.stdout).toBe('');
  });

  it('creates enterprise keys with their own limits', async () => {
    const res = await apikey('create', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '900000');
    expect(res.code).toBe(0);
    expect(res.stdout.trim().split('\n').at(-1)).toMatch(/^as_[A-Za-z0-9_-]{43}$/);
  });

  it('list shows id, name, plan, limits, dates and state, never a key', async () => {
    const res = await apikey('list');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^id\tname\tplan\tlimits\tcreated\tlast used\tstate$/m);
    expect(res.stdout).toMatch(/\tci robot\tpro\tplan\t\d{4}-\d\d-\d\dT[^\t]+\t-\tactive$/m);
    expect(res.stdout).toMatch(/\tenterprise\t5000\/min 900000\/day\t/);
    expect(res.stdout).not.toContain(created);
    expect(res.stdout).not.toMatch(/as_[A-Za-z0-9_-]{43}/);
  });

  it('the key works against the server, and revoke (by key, then by id) stops it', async () => {
    // The server's key cache reads this clock: moving it past the cache's bound replaces a wait.
    const clock = manualClock();
    const server = await startTestServer({}, { db, clock: clock.now });
    try {
      expect((await server.request('/v1/pets', { key: created })).status).toBe(200);
      const byKey = await apikey('revoke', created);
      expect(byKey.code).toBe(0);
      expect(byKey.stdout).toMatch(/^Revoked API key \d+\.$/m);
      const list = await apikey('list');
      expect(list.stdout).toMatch(/\tci robot\tpro\t.*\trevoked \d{4}-/);
      const made = (await apikey('create', '--plan', 'free')).stdout;
      const other = made.trim().split('\n').at(-1)!;
      const id = /^Created API key (\d+) /m.exec(made)![1]!;
      expect((await server.request('/v1/pets', { key: other })).status).toBe(200);
      expect((await apikey('revoke', id)).stdout).toContain(`Revoked API key ${id}.`);
      // Past the cache's ttl a cached answer is served once more while it is looked up again: then 401.
      clock.advance(3_000);
      for (const key of [created, other]) expect(await waitFor(async () => (await server.request('/v1/pets', { key })).status === 401, 2000, 10)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('revoking an unknown key fails', async () => {
    const res = await apikey('revoke', '999999');
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('No such API key');
  });

  // Opening the database fails the tests below that must not.
  const noDatabase: CliDeps = { openDatabase: () => Promise.reject(new Error('bad arguments opened the database')) };
  it.each([[['--help']], [['-h']], [['create', '--help']]])('%j prints the usage on stdout and exits 0, without opening the database', async (args) => {
    const res = await run(args, noDatabase);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Usage: npm run --silent apikey -- create --plan/);
    expect(res.stderr).toBe('');
  });

  // Bad arguments are refused before the database is opened.
  it.each([
    [[]],
    [['create']],
    [['create', '--plan', 'gold']],
    [['create', '--plan', 'enterprise', '--per-minute', '10']],
    [['create', '--plan', 'free', '--per-minute', '10', '--per-day', '20']],
    [['create', '--plan', 'free', '--colour', 'red']],
    [['revoke']],
    [['revoke', 'not-a-key']],
    [['list', 'extra']],
    [['delete', '1']],
  ])('%j gets a usage message and a non-zero exit', async (args) => {
    const res = await run(args, noDatabase);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('Usage:');
    expect(res.stdout).toBe('');
  });
});
