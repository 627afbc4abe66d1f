import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScript } from '../helpers/run.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer } from '../helpers/testServer.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

const apikey = (...args: string[]) => runScript('scripts/apikey.ts', args, db.env);

describe('npm run apikey', () => {
  let created: string;

  it('create prints the new key alone on the last line', async () => {
    const res = await apikey('create', '--plan', 'pro', '--name', 'ci robot');
    expect(res.code).toBe(0);
    created = res.stdout.trim().split('\n').at(-1)!;
    expect(created).toMatch(/^as_[A-Za-z0-9_-]{43}$/);
  });

  it('creates enterprise keys with their own limits', async () => {
    const res = await apikey('create', '--plan', 'enterprise', '--per-minute', '5000', '--per-day', '900000');
    expect(res.code).toBe(0);
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
    const server = await startTestServer({}, { db });
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
      await new Promise((r) => setTimeout(r, 4_200)); // past the verifier's cache bound
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
    const res = await apikey(...args);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('Usage:');
  });
});
