import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer, type Server } from '../helpers/processes.js';
import { openLoad } from '../helpers/openLoad.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

const FLOOD_RATE = 120;
/**
 * Long enough for everything that recurs to recur many times, after which each second is like the last:
 * the address is banned within its first second (RATE_LIMIT_BAN_AFTER 10, for 900 s), the index of issued
 * keys is refreshed every 0.5 s, the real key's cache entry expires every second (1 s ttl) and is looked up again.
 */
const FLOOD_SECONDS = 20;

let db: ServerDatabase;
let server: Server;
beforeAll(async () => {
  db = await createServerDatabase('keyflood');
  server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'warn' }, { readyPath: '/readyz', stdout: 'ignore' });
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/**
 * Key lookups by hash that found no key: every lookup scans the key_hash index once, and each
 * one that finds a key reads one entry of it. The difference is lookups of keys nobody issued.
 */
async function keyLookups(): Promise<{ all: number; unknown: number }> {
  // Statistics are per database: read them in the service's.
  const client = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await client.connect();
  const { rows } = await client.query<{ scans: string; found: string }>(
    `SELECT idx_scan AS scans, idx_tup_read AS found FROM pg_stat_user_indexes WHERE indexrelname = 'api_keys_key_hash_key'`,
  );
  await client.end();
  return { all: Number(rows[0]!.scans), unknown: Number(rows[0]!.scans) - Number(rows[0]!.found) };
}

describe(`a flood of made-up keys (${FLOOD_RATE} req/s for ${FLOOD_SECONDS} s, one address)`, () => {
  it('costs the database no key lookup, and a real key sent meanwhile from the same address is served every time', async () => {
    // Issued before, never sent to this server: its first use must be looked up and accepted.
    const real = await createKey(db.env, { plan: 'free' });
    const before = await keyLookups();

    const flood = openLoad(`${server.baseUrl}/v1/pets?limit=1`, {
      rate: FLOOD_RATE,
      headers: () => ({ authorization: `Bearer as_${randomBytes(32).toString('base64url')}` }),
    });
    const realStatuses: number[] = [];
    // Once a second, for the flood's whole length (a real client retrying, paced by the flood itself).
    while (flood.sent() < FLOOD_RATE * FLOOD_SECONDS) {
      const res = await fetch(`${server.baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${real}` } });
      realStatuses.push(res.status);
      await res.arrayBuffer();
      const next = flood.sent() + FLOOD_RATE;
      while (flood.sent() < next && flood.sent() < FLOOD_RATE * FLOOD_SECONDS) await new Promise((r) => setTimeout(r, 50));
    }
    const result = await flood.stop();
    // Backends report their statistics when their connections close: stop the server to read them.
    expect(await server.stop()).toBe(0);
    const after = await keyLookups();
    const lookups = { all: after.all - before.all, unknown: after.unknown - before.unknown };
    console.log(`key flood: ${JSON.stringify(result.counts)}; the real key: ${realStatuses.length} requests; key lookups: ${lookups.all}, of unknown keys: ${lookups.unknown}`);

    expect(realStatuses[0], 'the real key, first try').toBe(200);
    expect(realStatuses.filter((s) => s !== 200)).toEqual([]);
    expect(realStatuses.length).toBeGreaterThanOrEqual(FLOOD_SECONDS - 1);
    // Every made-up key answered as a request without a valid key: 401 while its address has quota, then 429.
    expect(Object.keys(result.counts).sort()).toEqual(['401', '429']);
    expect(result.sent).toBeGreaterThanOrEqual(FLOOD_RATE * FLOOD_SECONDS);
    // The statistics did see lookups (the real key's, refreshed every few seconds): none was of a made-up key.
    expect(lookups.all, 'key lookups seen at all').toBeGreaterThan(0);
    expect(lookups.unknown, 'database lookups of made-up keys').toBe(0);
  }, 180_000);
});
