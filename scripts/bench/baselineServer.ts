/**
 * The ceiling for the service: bare Fastify running the service's own SQL through the same
 * pg pool settings, with no authentication, rate limits, validation or response schema.
 */
import Fastify from 'fastify';
import { createPool } from '../../src/db/pgPool.js';
import { petsRepository, type NewPet, type PetStatus } from '../../src/pets/repository.js';

const pool = createPool({
  max: Number(process.env.DB_POOL_MAX ?? 10),
  connection: { connectionString: process.env.DATABASE_URL! },
  onIdleError: () => {},
});
const pets = petsRepository(pool);
const app = Fastify({ logger: false });

app.get<{ Querystring: { limit?: string; status?: PetStatus } }>('/pets', async (request) => {
  const page = await pets.list({ limit: Number(request.query.limit ?? 20), status: request.query.status });
  return page.pets;
});
app.get<{ Params: { id: string } }>('/pets/:id', async (request, reply) => {
  return (await pets.get(Number(request.params.id))) ?? reply.code(404).send();
});
app.post<{ Body: NewPet }>('/pets', async (request, reply) => {
  reply.code(201);
  // The service's validation applies openapi.yaml's default status; the repository expects it.
  return pets.create({ ...request.body, status: request.body.status ?? 'available' });
});

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => pool.end()).then(() => process.exit(0)));
