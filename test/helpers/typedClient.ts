import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from '../../generated/openapi.js';
import { expectMatchesContract } from './contract.js';

export type ApiClient = Client<paths>;

/** Checks every response the typed client receives against openapi.yaml, like the raw helper does. */
const contractCheck: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: the contract check says whether that is allowed */
    }
    expectMatchesContract(request.method, new URL(request.url).pathname, { status: response.status, headers: response.headers, body });
  },
};

/**
 * A client typed by generated/openapi.ts: a change to openapi.yaml that breaks callers
 * breaks the build of these tests. Sends `key` as the bearer key unless a call sets its own
 * Authorization header.
 */
export function typedClient(apiUrl: string, key: string): ApiClient {
  const client = createClient<paths>({ baseUrl: apiUrl, headers: { authorization: `Bearer ${key}` } });
  client.use(contractCheck);
  return client;
}

/** A typed call's answer in the raw helper's shape ({ status, headers, body, text }), for tests that count outcomes. */
export async function answered<T, E>(call: Promise<{ data?: T; error?: E; response: Response }>) {
  const { data, error, response } = await call;
  const body = (data ?? error) as Partial<T> & Partial<Omit<E, keyof T>>;
  return { status: response.status, headers: response.headers, body, text: JSON.stringify(body ?? null) };
}
