import type pg from 'pg';
import { expect } from 'vitest';
import type { components } from '../../generated/openapi.js';
import type { TestServer } from './testServer.js';
import { typedClient, type ApiClient } from './typedClient.js';

type PetStatus = components['schemas']['PetStatus'];

/**
 * Pets whose status disagrees with their orders, written from the allowed states (not the
 * migration's view, so a mistake there cannot hide one here): a pet with orders is live and
 * pending with exactly one placed order and none completed, or sold with exactly one
 * completed and none placed. Pets without orders, or with only cancelled or expired ones, are
 * outside the workflow.
 */
export const STATUS_DISAGREEMENTS = `
  SELECT p.id, p.status,
         count(*) FILTER (WHERE o.status = 'placed')::int AS placed,
         count(*) FILTER (WHERE o.status = 'completed')::int AS completed
    FROM pets p JOIN orders o ON o.pet_id = p.id
   GROUP BY p.id, p.status, p.deleted_at
  HAVING NOT (
         (p.status = 'pending' AND p.deleted_at IS NULL AND count(*) FILTER (WHERE o.status = 'placed') = 1 AND count(*) FILTER (WHERE o.status = 'completed') = 0)
      OR (p.status = 'sold' AND count(*) FILTER (WHERE o.status = 'placed') = 0 AND count(*) FILTER (WHERE o.status = 'completed') = 1)
      OR count(*) FILTER (WHERE o.status IN ('placed', 'completed')) = 0)`;

/** Fails the test with the offending pets if any pet's status disagrees with its orders. */
export async function expectStatusesAgree(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query(STATUS_DISAGREEMENTS);
  expect(rows, 'pets whose status disagrees with their orders').toEqual([]);
}

/** A typed client with another API key (responses contract-checked, as the server's own). */
export const clientFor = (server: TestServer, key: string): ApiClient => typedClient(`${server.baseUrl}/v1`, key);

/** Adds a pet through the API and returns its id. */
export async function addPet(server: TestServer, status: PetStatus = 'available', name = 'Rex'): Promise<number> {
  const { data, response } = await server.api.POST('/pets', { body: { name, categoryId: 1, status } });
  expect(response.status).toBe(201);
  return data!.id;
}

/** A pet's status as the database holds it. */
export async function petStatus(server: TestServer, petId: number): Promise<string> {
  return (await server.app.database.pool.query<{ status: string }>('SELECT status FROM pets WHERE id = $1', [petId])).rows[0]!.status;
}

/** How many orders the database holds (of every key). */
export async function orderCount(server: TestServer): Promise<number> {
  return (await server.app.database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM orders')).rows[0]!.n;
}
