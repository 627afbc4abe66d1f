import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type CliDeps } from '../../scripts/apikey.js';
import { SCOPES } from '../../src/accounts/repository.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { manualClock } from '../helpers/clock.js';
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

/** The key on the last line of a create's output, alone. */
const lastLine = (res: RunResult) => res.stdout.trim().split('\n').at(-1)!;
const KEY = /^ask_[0-9A-Za-z]{36}$/;

describe('npm run apikey', () => {
  let created: string;
  let createdAccount: number;

  it('create prints the new key alone on the last line (run as a script)', async () => {
    const res = await spawnApikey('create', '--plan', 'pro', '--name', 'ci robot');
    expect(res.code).toBe(0);
    created = lastLine(res);
    expect(created).toMatch(KEY);
    const made = /^Created account (\d+) \(pro, "ci robot"\) and its API key (\d+)\. /m.exec(res.stdout);
    expect(made).not.toBeNull();
    createdAccount = Number(made![1]);
  });

  it('create --plan free prints the key alone on the last line', async () => {
    const res = await apikey('create', '--plan', 'free');
    expect(res.code).toBe(0);
    expect(res.stdout.endsWith('\n')).toBe(true);
    expect(lastLine(res)).toMatch(KEY);
    expect(res.stdout.trim().split('\n')).toHaveLength(2);
    expect(res.stderr).toBe('');
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
    expect(lastLine(res)).toMatch(KEY);
  });

  it('list shows id, name, plan, limits, dates, state and account (last, so scripts reading the columns before it keep working), never a key', async () => {
    const res = await apikey('list');
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^id\tname\tplan\tlimits\tcreated\tlast used\tstate\taccount$/m);
    expect(res.stdout).toMatch(new RegExp(`^\\d+\\tci robot\\tpro\\tplan\\t\\d{4}-\\d\\d-\\d\\dT[^\\t]+\\t-\\tactive\\t${createdAccount}$`, 'm'));
    expect(res.stdout).toMatch(/^\d+\t-\tenterprise\t5000\/min 900000\/day\t[^\t]+\t-\tactive\t\d+$/m);
    expect(res.stdout).not.toContain(created);
    expect(res.stdout).not.toMatch(/ask_[0-9A-Za-z]{36}/);
  });

  it('create --account adds a key to that account: listed with it, working, sharing the account', async () => {
    const res = await apikey('create', '--account', String(createdAccount), '--name', 'second');
    expect(res.code).toBe(0);
    const second = lastLine(res);
    expect(second).toMatch(KEY);
    const id = Number(/^Created API key (\d+) of account (\d+), "second"\. /m.exec(res.stdout)?.[1]);
    expect(res.stdout).toContain(`of account ${createdAccount}, "second".`);
    const list = (await apikey('list')).stdout;
    expect(list).toMatch(new RegExp(`^${id}\\tsecond\\tpro\\tplan\\t[^\\t]+\\t-\\tactive\\t${createdAccount}$`, 'm'));
    expect(list.split('\n').filter((line) => line.split('\t')[7] === String(createdAccount))).toHaveLength(2);
    const server = await startTestServer({}, { db });
    try {
      // One account behind both keys: the same account, the same orders, one key list of two.
      const first = await server.request('/v1/account', { key: created });
      const other = await server.request('/v1/account', { key: second });
      expect(first.status).toBe(200);
      expect(other.body).toEqual(first.body);
      expect(other.body).toMatchObject({ id: createdAccount, name: 'ci robot', plan: 'pro' });
      const placed = await server.request('/v1/store/orders', { key: second, body: { petId: (await server.request('/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).body.id } });
      expect(placed.status).toBe(201);
      expect((await server.request('/v1/store/orders', { key: created })).body.map((o: { id: number }) => o.id)).toEqual([placed.body.id]);
      const keys = await server.request('/v1/account/api-keys', { key: created });
      expect(keys.body.map((k: { id: number; name: string; scopes: string[] }) => [k.id, k.name, k.scopes])).toEqual([
        [expect.any(Number), 'ci robot', SCOPES],
        [id, 'second', SCOPES],
      ]);
    } finally {
      await server.close();
    }
  });

  it('create --account with an account that does not exist fails, creating nothing', async () => {
    const before = (await apikey('list')).stdout;
    const res = await apikey('create', '--account', '987654321');
    expect(res.code).toBe(1);
    expect(res.stderr).toBe('No such account: 987654321.\n');
    expect(res.stdout).toBe('');
    expect((await apikey('list')).stdout).toBe(before);
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
      const made = await apikey('create', '--plan', 'free');
      const other = lastLine(made);
      const id = /and its API key (\d+)\. /m.exec(made.stdout)![1]!;
      expect((await server.request('/v1/pets', { key: other })).status).toBe(200);
      expect((await apikey('revoke', id)).stdout).toContain(`Revoked API key ${id}.`);
      clock.advance(4_000); // the verifier's bound on a cached answer's age
      expect((await server.request('/v1/pets', { key: created })).status).toBe(401);
      expect((await server.request('/v1/pets', { key: other })).status).toBe(401);
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
    // An added key takes its account's plan and limits: none may be given with --account.
    [['create', '--account', '1', '--plan', 'free']],
    [['create', '--account', '1', '--per-minute', '10', '--per-day', '20']],
    [['create', '--account', 'abc']],
    [['create', '--account', '0']],
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
