import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Plan } from '../../src/repositories/apiKeys.js';
import { expectMatchesContract } from './contract.js';
import { createTestDatabase, type TestDatabase } from './testDatabase.js';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  method?: string;
  key?: string | null;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string is sent as it is. */
  body?: unknown;
}

export interface TestServer {
  app: FastifyInstance;
  baseUrl: string;
  db: TestDatabase;
  /** A key created for this server (free plan unless asked otherwise). */
  key: string;
  createKey(plan?: Plan, limits?: { perMinute: number; perDay: number }): Promise<string>;
  /** How many pets the database holds: to show that a rejected request stored nothing. */
  petCount(): Promise<number>;
  /** Sends a request over HTTP and checks the response against openapi.yaml. */
  request<T = any>(path: string, opts?: RequestOptions): Promise<ApiResponse<T>>;
  close(): Promise<void>;
}

/** Builds the app exactly as server.ts does, on a fresh database, listening on a free port. */
export async function startTestServer(env: Record<string, string> = {}, db?: TestDatabase): Promise<TestServer> {
  const database = db ?? (await createTestDatabase());
  const config = loadConfig({ LOG_LEVEL: 'silent', PORT: '0', ...database.env, ...env });
  const app = await buildApp(config);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const createKey: TestServer['createKey'] = async (plan = 'free', limits) =>
    (await app.apiKeys.create({ plan, ...limits })).key;
  const key = await createKey('business');

  return {
    app,
    baseUrl,
    db: database,
    key,
    createKey,
    async petCount() {
      return (await app.database.pool.query<{ n: number }>('SELECT count(*) AS n FROM pets')).rows[0]!.n;
    },
    async request(path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const auth = opts.key === undefined ? key : opts.key;
      if (auth !== null) headers.authorization ??= `Bearer ${auth}`;
      let body: string | undefined;
      if (typeof opts.body === 'string') body = opts.body;
      else if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const method = opts.method ?? (body === undefined ? 'GET' : 'POST');
      const url = path.startsWith('http') ? path : `${baseUrl}${path}`;
      const res = await fetch(url, { method, headers, body });
      const text = await res.text();
      let parsed: any = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: left as text for the assertion that follows */
      }
      const result = { status: res.status, headers: res.headers, body: parsed, text };
      expectMatchesContract(method, url, result);
      return result;
    },
    async close() {
      await app.close();
      if (!db) await database.drop();
    },
  };
}
