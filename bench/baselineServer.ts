/**
 * The ceiling for the service: bare Fastify running the service's own SQL (src/pets/sql.ts,
 * src/orders/sql.ts: statement text only; pg-boss's own job insert) through a plain pg.Pool of
 * the same size, and nothing else of the service: no authentication, rate limits, validation,
 * logging, metrics or response schema. Orders are those of the API key whose id is ORDER_OWNER.
 * Its writes (createPet, updatePet, placeOrder) do the service's database work, checks, events and
 * delivery jobs included, in one round trip each (ceilingWrites.ts): fewer round trips, never less work.
 * Its createPet takes whatever lock src/pets/sql.ts's statement takes, and no other: GET
 * /statements answers the statements it runs, and the report says whether they lock.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyReply } from 'fastify';
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { enqueueDeliveries } from '../src/webhooks/queue.js';
import * as orders from '../src/orders/sql.js';
import { CREATE_WITH_EVENT, GET, LIST, LIST_BY_CATEGORY, LIST_BY_CATEGORY_AND_STATUS, LIST_BY_STATUS } from '../src/pets/sql.js';
import { ceilingFunctions, refusalOf } from './ceilingWrites.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_MAX ?? 10) });
pool.on('error', () => {});
const app = Fastify({ logger: false });
app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, app.getDefaultJsonParser('ignore', 'ignore'));

app.get<{ Querystring: { limit?: string; status?: string; categoryId?: string } }>('/pets', async (request) => {
  // The service's query: one row more than the page, to tell whether another page follows.
  const limit = Number(request.query.limit ?? 20);
  const { status, categoryId } = request.query;
  const params: unknown[] = [0, limit + 1, ...(categoryId ? [Number(categoryId)] : []), ...(status ? [status] : []), new Date()];
  const sql = categoryId ? (status ? LIST_BY_CATEGORY_AND_STATUS : LIST_BY_CATEGORY) : status ? LIST_BY_STATUS : LIST;
  const { rows } = await pool.query(sql, params);
  return rows.length > limit ? rows.slice(0, limit) : rows;
});
app.get<{ Params: { id: string } }>('/pets/:id', async (request, reply) => {
  const { rows } = await pool.query(GET, [Number(request.params.id), new Date()]);
  return rows[0] ?? reply.code(404).send();
});

/**
 * The statement pg-boss runs for the service's delivery jobs (src/webhooks/queue.ts), taken once from
 * pg-boss itself at start (the service has made its queue): requests run it on the pool directly.
 */
async function jobInsertStatement(): Promise<string> {
  const boss = new PgBoss({ connectionString: process.env.DATABASE_URL, max: 1, schedule: false, supervise: false, migrate: false });
  await boss.start();
  let statement = '';
  const recorder = { query: async (text: string) => ((statement = text), { rows: [] }) } as unknown as pg.PoolClient;
  await enqueueDeliveries(boss, recorder, [{ eventId: 0, endpointId: 0, accountId: 0, series: randomUUID(), attempt: 1 }]);
  await boss.stop({ graceful: false, close: true });
  return statement;
}
const JOB_INSERT = await jobInsertStatement();

// What createPet runs, as text, for the benchmark to check (bench/locks.ts: does it take an advisory lock?).
app.get('/statements', async () => ({ createPet: { 'src/pets/sql.ts CREATE_WITH_EVENT': CREATE_WITH_EVENT, "pg-boss's job insert": JOB_INSERT } }));

// The benchmark key's account: it places the orders and creates and changes the pets, as through the service.
const owner = Number(process.env.ORDER_OWNER ?? 1);
const MAX_OPEN_ORDERS = Number(process.env.OPEN_ORDERS_ENTERPRISE ?? 1_000_000_000);
// The service's default hold (ORDER_HOLD_SECONDS): the statement is the same whatever it is.
const HOLD_SECONDS = Number(process.env.ORDER_HOLD_SECONDS ?? 259_200);

// Every write is the service's database work in one round trip: a function running its statements (ceilingWrites.ts).
await pool.query(ceilingFunctions());
/** One write: the function's answer, or the status of its refusal (which rolled it back). */
async function write(reply: FastifyReply, status: number, sql: string, params: unknown[]) {
  try {
    const { rows } = await pool.query<{ r: unknown }>(sql, params);
    return reply.code(status).send(rows[0]!.r);
  } catch (err) {
    const refused = refusalOf(err);
    if (refused === undefined) throw err;
    return reply.code(refused).send();
  }
}

// The service's transaction (src/pets/repository.ts create()): the pet with its event in one statement, then a delivery job per subscribed endpoint.
app.post<{ Body: { name: string; categoryId: number; status?: string } }>('/pets', async (request, reply) =>
  write(reply, 201, 'SELECT bench_create_pet($1, $2, $3, $4) AS r', [request.body.name, request.body.categoryId, request.body.status ?? 'available', owner]),
);
// src/pets/repository.ts update(): the release of an ended hold, the pet's lock, its creator, the order holding a changed status, the change, its event and jobs.
app.patch<{ Params: { id: string }; Body: { name?: string; categoryId?: number; status?: string } }>('/pets/:id', async (request, reply) => {
  const patch = request.body;
  return write(reply, 200, 'SELECT bench_update_pet($1, $2, $3, $4, $5, $6) AS r', [Number(request.params.id), patch.name ?? null, patch.categoryId ?? null, patch.status ?? null, owner, new Date()]);
});

// src/orders/repository.ts place(): the account's lock, the release of the pet's ended hold, the guarded placement, then order.placed and pet.updated with their jobs.
app.post<{ Body: { petId: number } }>('/store/orders', async (request, reply) =>
  write(reply, 201, 'SELECT bench_place_order($1, $2, $3, $4, $5) AS r', [request.body.petId, owner, MAX_OPEN_ORDERS, HOLD_SECONDS, new Date()]),
);
app.get<{ Querystring: { limit?: string } }>('/store/orders', async (request) => {
  const limit = Number(request.query.limit ?? 20);
  const { rows } = await pool.query(orders.LIST, [owner, 0, limit + 1, new Date()]);
  return rows.length > limit ? rows.slice(0, limit) : rows;
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
