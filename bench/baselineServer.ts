/**
 * The ceiling for the service: bare Fastify running the service's own SQL (src/pets/sql.ts,
 * src/orders/sql.ts: statement text only, and the write functions of migration 018) through a
 * plain pg.Pool of the same size, and nothing else of the service: no authentication, rate limits,
 * validation, logging, metrics or response schema. Orders are those of the API key whose id is
 * ORDER_OWNER. Its writes (createPet, updatePet, placeOrder) are the service's own function calls,
 * checks, events and delivery intents included, one round trip each: the same database work. The
 * intents become pg-boss jobs as the service's do, by the service's own outbox dispatcher
 * (src/webhooks/outbox.ts) in this process, nudged after a write that queued some.
 * Its createPet takes whatever lock the function takes, and no other: GET /statements answers the
 * functions it runs, and the report says whether they lock.
 */
import Fastify, { type FastifyReply } from 'fastify';
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { startOutboxDispatcher } from '../src/webhooks/outbox.js';
import { refusalOf } from '../src/db/refusal.js';
import { errorStatuses } from '../src/errors/apiError.js';
import * as orders from '../src/orders/sql.js';
import { GET, LIST, LIST_BY_CATEGORY, LIST_BY_CATEGORY_AND_STATUS, LIST_BY_STATUS } from '../src/pets/sql.js';

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

/** The functions one createPet runs (migration 018), as the database holds them. */
async function createPetFunctions(): Promise<Record<string, string>> {
  const names = ['create_pet', 'idempotency_claim', 'idempotency_save', 'record_event', 'pet_object'];
  const { rows } = await pool.query<{ name: string; def: string }>(
    `SELECT p.proname AS name, pg_get_functiondef(p.oid) AS def FROM pg_proc p WHERE p.proname = ANY ($1) AND p.pronamespace = 'public'::regnamespace`,
    [names],
  );
  return Object.fromEntries(rows.map((r) => [`migration 018 ${r.name}`, r.def]));
}
const CREATE_PET_FUNCTIONS = await createPetFunctions();

// What createPet runs, as text, for the benchmark to check (bench/locks.ts: does it take an advisory lock?).
app.get('/statements', async () => ({ createPet: CREATE_PET_FUNCTIONS }));

// The benchmark key's account: it places the orders and creates and changes the pets, as through the service.
const owner = Number(process.env.ORDER_OWNER ?? 1);
const MAX_OPEN_ORDERS = Number(process.env.OPEN_ORDERS_ENTERPRISE ?? 1_000_000_000);
// The service's default hold (ORDER_HOLD_SECONDS): the statement is the same whatever it is.
const HOLD_SECONDS = Number(process.env.ORDER_HOLD_SECONDS ?? 259_200);

// The delivery intents' dispatch, as in the service (its queue exists: the service made it in this database), on pools
// named as the service's background ones, so the proxy counts their round trips apart from the requests' (roundTrips.ts).
const boss = new PgBoss({ connectionString: process.env.DATABASE_URL, max: 2, schedule: false, supervise: false, migrate: false, application_name: 'animal-store-jobs' });
boss.on('error', () => {});
await boss.start();
const outbox = startOutboxDispatcher(boss, new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1, application_name: 'animal-store-webhook-outbox' }), { onError: () => {} });

/** One write: the function's answer's body, or the status of its refusal (which rolled it back). */
async function write(reply: FastifyReply, status: number, sql: string, params: unknown[]) {
  try {
    const { rows } = await pool.query<{ r: { body: unknown; queued: number } }>(sql, params);
    if (rows[0]!.r.queued > 0) outbox.written();
    return reply.code(status).send(rows[0]!.r.body);
  } catch (err) {
    const refused = refusalOf(err);
    if (refused === undefined) throw err;
    return reply.code(errorStatuses[refused.code as keyof typeof errorStatuses] ?? 500).send();
  }
}

// The service's calls (src/pets/repository.ts, src/orders/repository.ts), without an Idempotency-Key.
app.post<{ Body: { name: string; categoryId: number; status?: string } }>('/pets', async (request, reply) =>
  write(reply, 201, 'SELECT create_pet($1, $2, $3, $4, NULL) AS r', [request.body.name, request.body.categoryId, request.body.status ?? 'available', owner]),
);
app.patch<{ Params: { id: string }; Body: { name?: string; categoryId?: number; status?: string } }>('/pets/:id', async (request, reply) => {
  const patch = request.body;
  return write(reply, 200, 'SELECT update_pet($1, $2, $3, $4, $5, NULL, $6, NULL) AS r', [Number(request.params.id), patch.name ?? null, patch.categoryId ?? null, patch.status ?? null, owner, new Date()]);
});
app.post<{ Body: { petId: number } }>('/store/orders', async (request, reply) =>
  write(reply, 201, 'SELECT place_order($1, $2, $3, $4, $5, NULL) AS r', [request.body.petId, owner, MAX_OPEN_ORDERS, HOLD_SECONDS, new Date()]),
);
app.get<{ Querystring: { limit?: string } }>('/store/orders', async (request) => {
  const limit = Number(request.query.limit ?? 20);
  const { rows } = await pool.query(orders.LIST, [owner, 0, limit + 1, new Date()]);
  return rows.length > limit ? rows.slice(0, limit) : rows;
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => outbox.stop()).then(() => boss.stop({ graceful: false, close: true })).then(() => pool.end()).then(() => process.exit(0)));
