import { vi } from 'vitest';
import type { components } from '../../generated/openapi.js';
import { SCOPES, type Plan, type Scope } from '../../src/accounts/repository.js';
import { nextPageQuery } from './nextPage.js';
import type { TestServer } from './testServer.js';
import { typedClient, type ApiClient } from './typedClient.js';

export type ApiKey = components['schemas']['ApiKey'];
export type ApiKeyWithSecret = components['schemas']['ApiKeyWithSecret'];

/** The challenges of a refused key (RFC 6750 §3), exactly as the service words them. */
export const INVALID_TOKEN = 'Bearer realm="animal-store", error="invalid_token"';
export const insufficientScope = (scope: Scope) => `Bearer realm="animal-store", error="insufficient_scope", scope="${scope}"`;

/** A key of a test account: its secret, its id, the key as created, and a typed client that sends it. */
export interface TestKey {
  id: number;
  secret: string;
  created: ApiKeyWithSecret;
  api: ApiClient;
}

export interface TestAccount {
  id: number;
  /** The account's first key, holding every scope. */
  first: TestKey;
}

const keyOf = (server: TestServer, created: ApiKeyWithSecret): TestKey => ({ id: created.id, secret: created.secret, created, api: typedClient(`${server.baseUrl}/v1`, created.secret) });

/** A new account (business plan unless asked otherwise: tests make many requests) through the repository, as the CLI does. */
export async function newAccount(server: TestServer, opts: { plan?: Plan; name?: string; perMinute?: number; perDay?: number } = {}): Promise<TestAccount> {
  const { accountId, key } = await server.app.accounts.createAccount({ plan: 'business', ...opts });
  return { id: accountId, first: keyOf(server, key) };
}

/** Another key of the account, through the repository (accepted on this server at once). */
export async function addKey(server: TestServer, accountId: number, scopes: Scope[] = SCOPES, opts: { name?: string; expiresAt?: string } = {}): Promise<TestKey> {
  const key = await server.app.accounts.createKey(accountId, { name: opts.name ?? 'test', scopes, expiresAt: opts.expiresAt });
  if (!key) throw new Error(`no account ${accountId}`);
  return keyOf(server, key);
}

/** A key created over HTTP with `api`, as a typed client's user holds it. */
export const keyFrom = (server: TestServer, created: ApiKeyWithSecret): TestKey => keyOf(server, created);

/** Postgres's clock (ms since the epoch), the one that sets expiresAt on a roll and revokedAt. */
export async function databaseNow(server: TestServer): Promise<number> {
  const { rows } = await server.app.database.pool.query<{ t: number }>('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS t');
  return rows[0]!.t;
}

/** A key's row as the database holds it (times in ms, truncated as the API shows them), read apart from the service's code. */
export async function keyRow(server: TestServer, keyId: number) {
  const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8 AS "${column}"`;
  const { rows } = await server.app.database.pool.query<{ account_id: string; revoked_at: number | null; expires_at: number | null; scopes: Scope[]; name: string }>(
    `SELECT account_id, name, scopes, ${ms('revoked_at')}, ${ms('expires_at')} FROM api_keys WHERE id = $1`,
    [keyId],
  );
  return rows[0];
}

/** How many keys the account has in the database, and how many of them are live (neither revoked nor expired). */
export async function keyCounts(server: TestServer, accountId: number): Promise<{ all: number; live: number }> {
  const { rows } = await server.app.database.pool.query<{ all: number; live: number }>(
    `SELECT count(*)::int AS all, count(*) FILTER (WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))::int AS live
       FROM api_keys WHERE account_id = $1`,
    [accountId],
  );
  return rows[0]!;
}

/** Every page of listApiKeys, following Link rel=next: the pages' keys, the raw texts, and how many pages. */
export async function listAllKeys(api: ApiClient, limit: number): Promise<{ keys: ApiKey[]; texts: string[]; pages: number[] }> {
  const keys: ApiKey[] = [];
  const texts: string[] = [];
  const pages: number[] = [];
  let query: { limit: number; cursor?: string } | undefined = { limit };
  while (query) {
    const { data, response } = await api.GET('/account/api-keys', { params: { query } });
    if (response.status !== 200) throw new Error(`listApiKeys answered ${response.status}`);
    texts.push(JSON.stringify(data));
    keys.push(...data!);
    pages.push(data!.length);
    query = nextPageQuery(response.headers.get('link'));
  }
  return { keys, texts, pages };
}

/** Counts the statements that look one key up by its hash (the index's own refreshes are not lookups). */
export function countKeyLookups(server: TestServer) {
  const query = vi.spyOn(server.app.database.pool, 'query');
  return {
    count: () => query.mock.calls.filter(([sql]) => typeof sql === 'string' && sql.includes('WHERE k.key_hash = $1')).length,
    restore: () => query.mockRestore(),
  };
}
