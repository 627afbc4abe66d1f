import { expect } from 'vitest';
import type { components } from '../../generated/openapi.js';
import type { Plan } from '../../src/accounts/repository.js';
import type { ApiResponse, RequestOptions } from './http.js';
import { clientFor } from './orders.js';
import type { TestServer } from './testServer.js';
import type { ApiClient } from './typedClient.js';

type PetStatus = components['schemas']['PetStatus'];

/** An account of its own: its id, its first key (every scope) and a typed client with that key. */
export interface TestAccount {
  accountId: number;
  key: string;
  client: ApiClient;
}

export async function newAccount(server: TestServer, plan: Plan = 'business'): Promise<TestAccount> {
  const { accountId, key } = await server.app.accounts.createAccount({ plan });
  return { accountId, key: key.secret, client: clientFor(server, key.secret) };
}

/** Adds a pet with `key` (the server's own by default); its id and the ETag createPet answered with. */
export async function createPet(
  server: TestServer,
  opts: { key?: string; name?: string; categoryId?: number; status?: PetStatus } = {},
): Promise<{ id: number; etag: string }> {
  const { key, name = 'Rex', categoryId = 1, status = 'available' } = opts;
  const res = await server.request('/v1/pets', { key, body: { name, categoryId, status } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id, etag: res.headers.get('etag')! };
}

/** What getPet answers for a pet: status, body and ETag (to show that a refused change changed nothing). */
export async function petView(server: TestServer, petId: number): Promise<{ status: number; body: unknown; etag: string | null }> {
  const res = await server.request(`/v1/pets/${petId}`);
  return { status: res.status, body: res.body, etag: res.headers.get('etag') };
}

/** Sends updatePet as merge-patch+json (a string body as it is), with `key` and extra headers. */
export function patchPet(server: TestServer, petId: number | string, body: unknown, opts: RequestOptions = {}): Promise<ApiResponse> {
  return server.request(`/v1/pets/${petId}`, {
    ...opts,
    method: 'PATCH',
    body,
    headers: { 'content-type': 'application/merge-patch+json', ...opts.headers },
  });
}

export function deletePet(server: TestServer, petId: number | string, opts: RequestOptions = {}): Promise<ApiResponse> {
  return server.request(`/v1/pets/${petId}`, { ...opts, method: 'DELETE' });
}

/** Places an order for `petId` with `key`. */
export function placeOrder(server: TestServer, petId: number, key: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  return server.request('/v1/store/orders', { key, body: { petId }, headers });
}

/** How many answers had each status and code, e.g. { '200': 1, '412 precondition_failed': 1 }. */
export function tally(answers: Array<{ status: number; body?: { code?: string } }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, body } of answers) {
    const outcome = status < 300 ? String(status) : `${status} ${body?.code}`;
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
  return counts;
}

/** A pet's row as the database holds it, removed or not. */
export async function petRow(server: TestServer, petId: number) {
  const { rows } = await server.app.database.pool.query<{ name: string; status: string; version: number; deleted: boolean }>(
    'SELECT name, status, version, deleted_at IS NOT NULL AS deleted FROM pets WHERE id = $1',
    [petId],
  );
  return rows[0];
}

/** The path and query of a `Link: <...>; rel="next"` URL, to follow on this server whatever PUBLIC_BASE_URL says; undefined without one. */
export function nextPath(link: string | null): string | undefined {
  if (!link) return undefined;
  const url = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!);
  return url.pathname + url.search;
}
