import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { freePort } from './ports.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { Plan } from '../../src/accounts/repository.js';
import { expectMatchesContract } from './contract.js';
import { typedClient, type ApiClient } from './typedClient.js';
import { methodOf, send, type ApiResponse, type RequestOptions } from './http.js';
import { createTestDatabase, type TestDatabase } from './testDatabase.js';

export interface TestServer {
  app: FastifyInstance;
  baseUrl: string;
  db: TestDatabase;
  /** A key created for this server (business plan), of an account of its own holding every scope. */
  key: string;
  /** A new account (free plan unless asked otherwise) and its first key, holding every scope. */
  createKey(plan?: Plan, limits?: { perMinute: number; perDay: number }): Promise<string>;
  /** How many pets the database holds: to show that a rejected request stored nothing. */
  petCount(): Promise<number>;
  /** The typed client (openapi-fetch over generated/openapi.ts), with this server's key; responses are contract-checked. */
  api: ApiClient;
  /** Sends a raw request over HTTP (for what a typed client cannot send) and checks the response against openapi.yaml. */
  request<T = any>(path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** A database shared with other servers or made by the test; by default one of its own, dropped on close. */
  db?: TestDatabase;
  /** The clock behind rate limits and the key cache; by default the system clock. */
  clock?: Clock;
  /** Receives the log lines (set LOG_LEVEL in env to see any). */
  logStream?: NodeJS.WritableStream;
}

/** Builds the app exactly as server.ts does, on a fresh database, listening on a free port. */
export async function startTestServer(env: Record<string, string> = {}, opts: TestServerOptions = {}): Promise<TestServer> {
  const { db, clock, logStream } = opts;
  const database = db ?? (await createTestDatabase());
  // A known port before start, so the public base URL (Location, Link) is this server's own.
  const port = await freePort();
  // Every response body is also checked by the service itself against openapi.yaml (a mismatch is a 500).
  const config = loadConfig({ LOG_LEVEL: 'silent', RESPONSE_VALIDATION: 'true', PORT: String(port), METRICS_PORT: '0', ...database.env, ...env });
  const app = await buildApp(config, { clock, logStream });
  await app.listen({ port, host: '127.0.0.1' });
  const baseUrl = `http://127.0.0.1:${port}`;
  const createKey: TestServer['createKey'] = async (plan = 'free', limits) =>
    (await app.accounts.createAccount({ plan, ...limits })).key.secret;
  const key = await createKey('business');

  return {
    app,
    baseUrl,
    db: database,
    key,
    api: typedClient(`${baseUrl}/v1`, key),
    createKey,
    async petCount() {
      return (await app.database.pool.query<{ n: number }>('SELECT count(*) AS n FROM pets')).rows[0]!.n;
    },
    async request(path, opts = {}) {
      const url = path.startsWith('http') ? path : `${baseUrl}${path}`;
      const result = await send(url, opts, key);
      expectMatchesContract(methodOf(opts), url, result);
      return result;
    },
    async close() {
      await app.close();
      if (!db) await database.drop();
    },
  };
}
