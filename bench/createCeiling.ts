/**
 * npm run bench:creates [-- --seconds 3 --rounds 3 --instances 1,2,4 --connections 10]: the create
 * throughput that the id-order lock (src/pets/sql.ts) allows all instances together. Each
 * instance is a process with a pool of `connections` (DB_POOL_MAX's default) that sends
 * creates back to back, straight to Postgres (no HTTP: the lock's ceiling, not the service's).
 * Prints one Markdown table. Runs on a scratch database of BENCH_DATABASE_URL's server
 * (or DATABASE_URL's, or the local one), dropped afterwards.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { createDatabase, dropDatabase } from '../test/helpers/databases.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { projectRoot } from '../src/paths.js';
import { migrate } from '../src/db/migrate.js';
import { INSERT } from '../src/pets/sql.js';
import { median, rotate } from './stats.js';

/** One way of creating a pet: what a create sends, on one connection. */
type Variant = (client: pg.PoolClient, apiKeyId: number) => Promise<unknown>;

const pet = () => [`bench ${randomUUID()}`, 1, 'available'];

const VARIANTS: Record<string, { label: string; run: Variant }> = {
  plain: { label: 'plain create (one statement, in id order)', run: (c) => c.query(INSERT, pet()) },
  keyed: {
    // As src/idempotency/idempotent.ts runs it: the lock is held from the insert across two more round trips.
    label: 'keyed create (claim, insert, save, commit: lock held across 2 round trips)',
    run: async (c, apiKeyId) => {
      await c.query('BEGIN');
      const key = randomUUID();
      await c.query(`INSERT INTO idempotency_keys (api_key_id, operation, key, request_hash, status, response_body) VALUES ($1, 'createPet', $2, 'h', 0, 'null') ON CONFLICT DO NOTHING`, [apiKeyId, key]);
      const { rows } = await c.query(INSERT, pet());
      await c.query(`UPDATE idempotency_keys SET status = 201, response_body = $3 WHERE api_key_id = $1 AND operation = 'createPet' AND key = $2`, [apiKeyId, key, JSON.stringify(rows[0])]);
      await c.query('COMMIT');
    },
  },
  unordered: {
    label: 'plain create without the id-order lock (reference: not what the service runs)',
    run: (c) => c.query(`INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING id`, pet()),
  },
};

const USAGE = `Usage: npm run bench:creates [-- --seconds <n> --rounds <n> --instances <n,n,…> --connections <n>]

Measures how many pets all instances together can create per second under the id-order lock,
straight against Postgres (BENCH_DATABASE_URL, DATABASE_URL or 127.0.0.1:5432), on a scratch
database it drops afterwards. Defaults: 3 s per cell, 3 rounds, 1, 2 and 4 instances of 10 connections.`;

const { values } = parseCommandLine(USAGE, {
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    instances: { type: 'string', default: '1,2,4' },
    connections: { type: 'string', default: '10' },
    // How this script runs itself as one instance (not for people): JSON of instance()'s arguments.
    instance: { type: 'string' },
  },
});

/** One instance: opens its connections, says `ready`, waits for a line on stdin, creates for `seconds`, prints its count. */
async function instance(url: string, variant: string, connections: number, seconds: number, apiKeyId: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: connections });
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', resolve));
  process.stdin.destroy(); // nothing more comes: an open stdin would keep this process alive
  const until = performance.now() + seconds * 1000;
  const run = VARIANTS[variant]!.run;
  let count = 0;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until) {
        await run(client, apiKeyId);
        count++;
      }
    }),
  );
  for (const client of clients) client.release();
  await pool.end();
  process.stdout.write(`${JSON.stringify({ count })}\n`);
}

/** Runs `instances` instance processes at once; creates per second, all together. */
async function measure(url: string, variant: string, instances: number, connections: number, seconds: number, apiKeyId: number): Promise<number> {
  const children = Array.from({ length: instances }, () =>
    spawn(process.execPath, ['--import', 'tsx', 'bench/createCeiling.ts', '--instance', JSON.stringify([url, variant, connections, seconds, apiKeyId])], {
      cwd: projectRoot,
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const lines = children.map((child) => {
    let out = '';
    const lineSeen = new Map<string, () => void>();
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      for (const [pattern, resolve] of lineSeen) if (out.includes(pattern)) resolve();
    });
    return {
      waitFor: (pattern: string) => new Promise<string>((resolve) => (out.includes(pattern) ? resolve(out) : lineSeen.set(pattern, () => resolve(out)))),
    };
  });
  await Promise.all(lines.map((l) => l.waitFor('ready\n')));
  for (const child of children) child.stdin!.write('go\n');
  const outputs = await Promise.all(lines.map((l) => l.waitFor('}\n')));
  const total = outputs.map((o) => JSON.parse(o.split('\n').find((l) => l.startsWith('{'))!).count as number).reduce((a, b) => a + b, 0);
  return total / seconds;
}

async function main(): Promise<void> {
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  const connections = Number(values.connections);
  const instanceCounts = values.instances.split(',').map(Number);
  const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;
  const name = `bench_creates_${process.pid}`;
  const url = await createDatabase(adminUrl, name);
  try {
    const setup = new pg.Pool({ connectionString: url, max: 1 });
    await migrate(setup);
    const { rows } = await setup.query<{ id: number }>(`INSERT INTO api_keys (key_hash, plan) VALUES ($1, 'free') RETURNING id::int`, [randomUUID()]);
    const apiKeyId = rows[0]!.id;
    const { rows: settings } = await setup.query<{ v: string }>(`SELECT version() || ', synchronous_commit=' || current_setting('synchronous_commit') AS v`);
    await setup.end();

    process.stderr.write(`${settings[0]!.v}\n${rounds} rounds of ${seconds} s per cell, ${connections} connections per instance\n`);
    // Every cell once per round, in a new order each round (the machine's load drifts), then the median of each.
    const cells = Object.keys(VARIANTS).flatMap((variant) => instanceCounts.map((n) => ({ variant, n, perSecond: [] as number[] })));
    for (let round = 0; round < rounds; round++) {
      for (const cell of rotate(cells, round * 5)) {
        const perSecond = await measure(url, cell.variant, cell.n, connections, seconds, apiKeyId);
        cell.perSecond.push(perSecond);
        process.stderr.write(`round ${round + 1}: ${cell.variant} × ${cell.n}: ${perSecond.toFixed(0)} creates/s\n`);
      }
    }
    const header = `| creates per second, all instances together (median of ${rounds}) | ${instanceCounts.map((n) => `${n} instance${n > 1 ? 's' : ''} (${n * connections} connections)`).join(' | ')} |`;
    const table = [header, `|---|${instanceCounts.map(() => '---:').join('|')}|`];
    for (const [variant, { label }] of Object.entries(VARIANTS)) {
      const row = cells.filter((c) => c.variant === variant).map((c) => `${Math.round(median(c.perSecond))}`);
      table.push(`| ${label} | ${row.join(' | ')} |`);
    }
    process.stdout.write(`${table.join('\n')}\n`);
  } finally {
    await dropDatabase(adminUrl, name);
  }
}

if (values.instance) {
  const [url, variant, connections, seconds, apiKeyId] = JSON.parse(values.instance) as [string, string, number, number, number];
  await instance(url, variant, connections, seconds, apiKeyId);
} else {
  // The scratch database is dropped however this ends (lib/cleanup.ts).
  await runCommand(main);
}
