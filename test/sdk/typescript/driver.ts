// The sdk:check scenario through openapi-fetch over the project's own generated/openapi.ts types.
// Reads SDK_BASE_URL, SDK_KEY, SDK_TINY_KEY, SDK_PREFIX, SDK_CATEGORY, SDK_HOOK_URL, SDK_RECEIVED_URL; prints one `RESULT <step> ok|fail <detail>` line per step.
import { createHmac } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { paths } from '../../../generated/openapi.js';

const { SDK_BASE_URL: baseUrl = '', SDK_KEY: key = '', SDK_TINY_KEY: tinyKey = '', SDK_PREFIX: prefix = '', SDK_CATEGORY: category = '' } = process.env;
const client = (apiKey?: string) =>
  createClient<paths>({ baseUrl, headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} });
const api = client(key);
// The last request as sent (its Content-Type), kept by a middleware.
let lastRequest: Request | undefined;
api.use({
  onRequest({ request }) {
    lastRequest = request;
  },
});

function report(step: string, ok: boolean, detail: string) {
  console.log(`RESULT ${step} ${ok ? 'ok' : 'fail'} ${detail}`);
}

async function step(name: string, run: () => Promise<string>) {
  try {
    report(name, true, await run());
  } catch (err) {
    report(name, false, (err as Error).message.replace(/\s+/g, ' '));
  }
}

/** The API-Stability a response carries (`stable`: none), which must be what openapi.yaml marks (SDK_STABILITY_*). */
function stability(operation: string, response: Response): string {
  const got = response.headers.get('API-Stability') ?? 'stable';
  const want = process.env[`SDK_STABILITY_${operation.toUpperCase()}`];
  check(got === want, `${operation} API-Stability: ${got}, openapi.yaml marks it ${want}`);
  return `${operation} ${got}`;
}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** The query of the Link rel="next" target, or undefined on the last page. */
function nextQuery(link: string | null): Record<string, string> | undefined {
  const target = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link ?? '')?.[1];
  return target ? Object.fromEntries(new URL(target).searchParams) : undefined;
}

async function expectError(status: number, code: string, call: () => Promise<{ error?: { code: string }; response: Response }>) {
  const { error, response } = await call();
  check(response.status === status && error?.code === code, `expected ${status} ${code}, got ${response.status} ${error?.code}`);
  return response;
}

await step('list', async () => {
  for (let i = 0; i < 7; i++) {
    const { error } = await api.POST('/pets', { body: { name: `${prefix}-${i}`, categoryId: 1 } });
    check(!error, `create ${i}: ${error?.code}`);
  }
  let query: Record<string, string> | undefined = { limit: '2' };
  let pages = 0;
  let mine = 0;
  while (query) {
    const { data, error, response } = await api.GET('/pets', { params: { query: { ...query, limit: Number(query.limit) } } });
    check(data, `page ${pages + 1}: ${error?.code}`);
    pages++;
    mine += data.filter((pet) => pet.name.startsWith(`${prefix}-`)).length;
    query = nextQuery(response.headers.get('Link'));
  }
  check(mine === 7, `counted ${mine} of 7 pets over ${pages} pages`);
  return `7 pets over ${pages} pages`;
});

let created: number | undefined;
await step('create', async () => {
  const body = { name: `${prefix}-replayed`, categoryId: 2 };
  const idempotencyKey = `${prefix}-key`;
  const first = await api.POST('/pets', { body, params: { header: { 'Idempotency-Key': idempotencyKey } } });
  const again = await api.POST('/pets', { body, params: { header: { 'Idempotency-Key': idempotencyKey } } });
  check(first.data && again.data, `create: ${first.error?.code ?? again.error?.code}`);
  check(first.data.id === again.data.id, `replay made id ${again.data.id}, not ${first.data.id}`);
  const replayed = again.response.headers.get('Idempotent-Replayed');
  check(replayed === 'true', `Idempotent-Replayed: ${replayed}`);
  created = first.data.id;
  return `id ${created} replayed`;
});

await step('get', async () => {
  check(created !== undefined, 'nothing created');
  const { data, error } = await api.GET('/pets/{petId}', { params: { path: { petId: created } } });
  check(data?.id === created, `getPet: ${error?.code}`);
  return `id ${created}`;
});

await step('errors', async () => {
  await expectError(400, 'validation_failed', () => api.POST('/pets', { body: { name: '', categoryId: 1 } }));
  await expectError(401, 'unauthorized', () => client().GET('/pets', {}));
  await expectError(404, 'pet_not_found', () => api.GET('/pets/{petId}', { params: { path: { petId: 999_999_999 } } }));
  const tiny = client(tinyKey);
  for (let i = 0; i < 8; i++) {
    const { error, response } = await tiny.GET('/pets', { params: { query: { limit: 1 } } });
    if (response.status !== 429) continue;
    check(error?.code === 'rate_limited', `429 with ${error?.code}`);
    const retryAfter = Number(response.headers.get('Retry-After'));
    check(retryAfter > 0, `Retry-After: ${response.headers.get('Retry-After')}`);
    return `400 401 404 429 (Retry-After ${retryAfter})`;
  }
  throw new Error('no 429 after 8 requests with the tiny-quota key');
});

const orders: Array<{ id: number; petId: number }> = [];
await step('orders', async () => {
  for (let i = 0; i < 5; i++) {
    const pet = await api.POST('/pets', { body: { name: `${prefix}-order-${i}`, categoryId: 1 } });
    check(pet.data, `create pet ${i}: ${pet.error?.code}`);
    const { data, error, response } = await api.POST('/store/orders', { body: { petId: pet.data.id } });
    check(data?.status === 'placed', `placeOrder ${i}: ${response.status} ${error?.code}`);
    orders.push(data);
  }
  let query: Record<string, string> | undefined = { limit: '2' };
  let pages = 0;
  const listed = new Set<number>();
  while (query) {
    const { data, error, response } = await api.GET('/store/orders', { params: { query: { ...query, limit: Number(query.limit) } } });
    check(data, `page ${pages + 1}: ${error?.code}`);
    pages++;
    for (const order of data) listed.add(order.id);
    query = nextQuery(response.headers.get('Link'));
  }
  check(orders.every((o) => listed.has(o.id)), `listed ${orders.filter((o) => listed.has(o.id)).length} of 5 orders over ${pages} pages`);
  const got = await api.GET('/store/orders/{orderId}', { params: { path: { orderId: orders[0]!.id } } });
  check(got.data?.petId === orders[0]!.petId && got.data.status === 'placed', `getOrder: ${got.error?.code}`);
  const stability = got.response.headers.get('API-Stability');
  check(stability === 'experimental', `API-Stability: ${stability}`);
  const completed = await api.POST('/store/orders/{orderId}/complete', { params: { path: { orderId: orders[0]!.id } } });
  check(completed.data?.status === 'completed', `completeOrder: ${completed.error?.code}`);
  const cancelled = await api.POST('/store/orders/{orderId}/cancel', { params: { path: { orderId: orders[1]!.id } } });
  check(cancelled.data?.status === 'cancelled', `cancelOrder: ${cancelled.error?.code}`);
  const sold = await api.GET('/pets/{petId}', { params: { path: { petId: orders[0]!.petId } } });
  check(sold.data?.status === 'sold', `pet of the completed order: ${sold.data?.status}`);
  return `5 placed, listed over ${pages} pages, get, complete, cancel (API-Stability ${stability})`;
});

await step('conflicts', async () => {
  check(orders.length === 5, 'no orders placed');
  await expectError(409, 'pet_not_available', () => api.POST('/store/orders', { body: { petId: orders[2]!.petId } }));
  await expectError(409, 'invalid_order_transition', () => api.POST('/store/orders/{orderId}/complete', { params: { path: { orderId: orders[1]!.id } } }));
  await expectError(404, 'order_not_found', () => api.GET('/store/orders/{orderId}', { params: { path: { orderId: 999_999_999 } } }));
  return '409 pet_not_available, 409 invalid_order_transition, 404 order_not_found';
});

/** A key's secret as createApiKey and rollApiKey answer it: `ask_`, 30 random base62 characters and a 6-character checksum. */
const SECRET = /^ask_[0-9A-Za-z]{36}$/;

await step('keys', async () => {
  const account = await api.GET('/account', {});
  check(account.data && account.data.id > 0, `getAccount: ${account.response.status} ${account.error?.code}`);
  const accountStability = stability('getAccount', account.response);
  const made = await api.POST('/account/api-keys', { body: { name: `${prefix}-reader`, scopes: ['pets:read'] } });
  check(made.response.status === 201 && made.data, `createApiKey: ${made.response.status} ${made.error?.code}`);
  check(SECRET.test(made.data.secret), `createApiKey secret is not an ask_ key (prefix ${made.data.prefix})`);
  check(made.data.scopes.join() === 'pets:read', `createApiKey scopes: ${made.data.scopes}`);
  const reader = client(made.data.secret);
  const refused = await expectError(403, 'insufficient_scope', () => reader.POST('/pets', { body: { name: `${prefix}-refused`, categoryId: 1 } }));
  const challenge = refused.headers.get('WWW-Authenticate') ?? '';
  check(challenge.includes('scope="pets:write"'), `WWW-Authenticate: ${challenge}`);
  const read = await reader.GET('/pets', { params: { query: { limit: 1 } } });
  check(read.response.status === 200 && read.data, `listPets with the new key: ${read.response.status} ${read.error?.code}`);
  const rolled = await api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: made.data.id } }, body: { expiresInSeconds: 60 } });
  check(rolled.response.status === 201 && rolled.data, `rollApiKey: ${rolled.response.status} ${rolled.error?.code}`);
  check(SECRET.test(rolled.data.secret) && rolled.data.secret !== made.data.secret, 'rollApiKey: the secret is not a new ask_ key');
  check(rolled.data.id !== made.data.id && rolled.data.name === made.data.name && rolled.data.scopes.join() === 'pets:read', `rollApiKey: ${rolled.data.name} ${rolled.data.scopes}`);
  const listed = new Map<number, Record<string, unknown>>();
  let query: Record<string, string> | undefined = { limit: '100' };
  while (query) {
    const { data, error, response } = await api.GET('/account/api-keys', { params: { query: { ...query, limit: Number(query.limit) } } });
    check(data, `listApiKeys: ${response.status} ${error?.code}`);
    // openapi-fetch hands over the JSON as parsed: a secret would show as a property.
    for (const item of data as Array<Record<string, unknown>>) listed.set(item.id as number, item);
    query = nextQuery(response.headers.get('Link'));
  }
  const [old, fresh] = [listed.get(made.data.id), listed.get(rolled.data.id)];
  check(old && fresh, `listApiKeys: key ${made.data.id} ${old ? 'listed' : 'missing'}, key ${rolled.data.id} ${fresh ? 'listed' : 'missing'}`);
  check([...listed.values()].every((item) => !('secret' in item)), 'listApiKeys shows a secret');
  check(typeof old.expiresAt === 'string' && fresh.expiresAt === null, `expiresAt: old ${old.expiresAt}, new ${fresh.expiresAt}`);
  // The old key ends 60 s after the roll, to the second (both times are the server's).
  const overlap = (Date.parse(old.expiresAt) - Date.parse(rolled.data.createdAt)) / 1000;
  check(Math.abs(overlap - 60) <= 1, `old key expires ${overlap} s after the roll`);
  return `${accountStability}; ask_ key 201, createPet 403 ${challenge.match(/scope="[^"]*"/)![0]}, listPets 200, roll 201 (60 s), listed`;
});

/** A strong entity tag (RFC 9110 §8.8.3): a quoted string with no W/ prefix. */
const STRONG_ETAG = /^"[^"]*"$/;

await step('lifecycle', async () => {
  const made = await api.POST('/pets', { body: { name: `${prefix}-life`, categoryId: 3 } });
  check(made.response.status === 201 && made.data, `createPet: ${made.response.status} ${made.error?.code}`);
  const id = made.data.id;
  const etag = made.response.headers.get('ETag') ?? '';
  check(STRONG_ETAG.test(etag), `createPet ETag: ${etag}`);
  const path = { petId: id };
  // openapi-fetch answers a 304 (not ok, no Content-Length) with no data and the empty body as its error: "" (docs/SDKS.md).
  const unchanged = await api.GET('/pets/{petId}', { params: { path, header: { 'If-None-Match': etag } } });
  const notModified = unchanged.response;
  check(
    notModified.status === 304 && unchanged.data === undefined && (unchanged.error as unknown) === '',
    `getPet If-None-Match: ${notModified.status} data ${JSON.stringify(unchanged.data)} error ${JSON.stringify(unchanged.error)}`,
  );
  check(notModified.headers.get('ETag') === etag, `304 ETag: ${notModified.headers.get('ETag')}`);
  // Both media types are declared; openapi-fetch sends application/json unless told: it sends RFC 7396's here.
  const name = `${prefix}-renamed`;
  const patched = await api.PATCH('/pets/{petId}', {
    params: { path, header: { 'If-Match': etag } },
    headers: { 'Content-Type': 'application/merge-patch+json' },
    body: { name },
  });
  check(patched.response.status === 200 && patched.data?.name === name, `updatePet: ${patched.response.status} ${patched.error?.code} ${patched.data?.name}`);
  const mediaType = lastRequest?.headers.get('Content-Type');
  const newEtag = patched.response.headers.get('ETag') ?? '';
  check(STRONG_ETAG.test(newEtag) && newEtag !== etag, `updatePet ETag: ${newEtag} after ${etag}`);
  await expectError(412, 'precondition_failed', () =>
    api.PATCH('/pets/{petId}', { params: { path, header: { 'If-Match': etag } }, body: { name: `${prefix}-overwritten` } }),
  );
  const kept = await api.GET('/pets/{petId}', { params: { path } });
  check(kept.data?.name === name && kept.response.headers.get('ETag') === newEtag, `after the 412: ${kept.data?.name} ${kept.response.headers.get('ETag')}`);
  const deleted = await api.DELETE('/pets/{petId}', { params: { path, header: { 'If-Match': newEtag } } });
  check(deleted.response.status === 204, `deletePet: ${deleted.response.status} ${deleted.error?.code}`);
  await expectError(404, 'pet_not_found', () => api.GET('/pets/{petId}', { params: { path } }));

  const categoryId = Number(category);
  const mine: number[] = [];
  for (let i = 0; i < 3; i++) {
    const pet = await api.POST('/pets', { body: { name: `${prefix}-category-${i}`, categoryId } });
    check(pet.data?.categoryId === categoryId, `create in category ${categoryId}: ${pet.error?.code} ${pet.data?.categoryId}`);
    mine.push(pet.data.id);
  }
  const seen: number[] = [];
  let query: Record<string, string> | undefined = { limit: '1', categoryId: category };
  let pages = 0;
  while (query) {
    const { data, error, response } = await api.GET('/pets', { params: { query: { ...query, limit: Number(query.limit), categoryId: Number(query.categoryId) } } });
    check(data, `page ${pages + 1}: ${response.status} ${error?.code}`);
    pages++;
    seen.push(...data.map((pet) => pet.id));
    query = nextQuery(response.headers.get('Link'));
  }
  check(seen.join() === mine.join(), `category ${categoryId}: listed [${seen}], made [${mine}]`);
  return `304, PATCH ${mediaType?.replace('application/', '')} ${etag}->${newEtag}, 412, 204, 404; category: 3 of 3 in ${pages} pages`;
});

const { SDK_HOOK_URL: hookUrl = '', SDK_RECEIVED_URL: receivedUrl = '' } = process.env;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of "id.timestamp.body", keyed with the base64-decoded secret after `whsec_`. */
function signature(secret: string, content: string): string {
  return `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(content).digest('base64')}`;
}

await step('webhooks', async () => {
  const made = await api.POST('/webhook-endpoints', { body: { url: hookUrl, eventTypes: ['pet.created'], description: `${prefix} sdk:check` } });
  check(made.response.status === 201 && made.data, `createWebhookEndpoint: ${made.response.status} ${made.error?.code}`);
  const endpoint = made.data;
  const endpointStability = stability('createWebhookEndpoint', made.response);
  let eventsStability = '';
  check(endpoint.secret.startsWith('whsec_') && endpoint.status === 'enabled', `createWebhookEndpoint: secret ${endpoint.secret.slice(0, 6)}…, status ${endpoint.status}`);
  const pets: number[] = [];
  for (let i = 0; i < 3; i++) {
    const pet = await api.POST('/pets', { body: { name: `${prefix}-hook-${i}`, categoryId: 1 } });
    check(pet.data, `create pet ${i}: ${pet.error?.code}`);
    pets.push(pet.data.id);
  }
  // Follows every page from the first (limit 1) until the three pet.created events are seen; an
  // event is listed once the transactions that began before it have ended, so a walk that misses
  // one starts again 2 s later (few enough walks to stay within the key's quota), for at most 30 s.
  const found = new Map<number, string>();
  let pages = 0;
  for (const deadline = Date.now() + 30_000; found.size < pets.length; await sleep(found.size < pets.length ? 2000 : 0)) {
    check(Date.now() < deadline, `listEvents: ${found.size} of ${pets.length} pet.created events over ${pages} pages`);
    pages = 0;
    let query: Record<string, string> | undefined = { limit: '1' };
    while (query && found.size < pets.length) {
      const { data, error, response } = await api.GET('/events', { params: { query: { ...query, limit: Number(query.limit) } } });
      check(data, `listEvents page ${pages + 1}: ${response.status} ${error?.code}`);
      eventsStability = stability('listEvents', response);
      pages++;
      for (const event of data) {
        const id = event.data.object.id as number;
        if (event.type === 'pet.created' && pets.includes(id)) found.set(id, event.id);
      }
      query = nextQuery(response.headers.get('Link'));
    }
  }
  // Deliveries are listed newest first; the first page holds this endpoint's few attempts.
  const delivered = new Map<string, number>();
  for (const deadline = Date.now() + 20_000; delivered.size < pets.length; await sleep(250)) {
    check(Date.now() < deadline, `listWebhookDeliveries: ${delivered.size} of ${pets.length} events delivered with 2xx`);
    const { data, error, response } = await api.GET('/webhook-endpoints/{endpointId}/deliveries', { params: { path: { endpointId: endpoint.id }, query: { limit: 100 } } });
    check(data, `listWebhookDeliveries: ${response.status} ${error?.code}`);
    for (const attempt of data) {
      const ok = attempt.responseStatus !== null && attempt.responseStatus >= 200 && attempt.responseStatus < 300;
      if (ok && [...found.values()].includes(attempt.eventId)) delivered.set(attempt.eventId, attempt.responseStatus!);
    }
  }
  const eventId = found.get(pets[0]!)!;
  const got = await fetch(receivedUrl + encodeURIComponent(eventId));
  check(got.status === 200, `the receiver has no request with webhook-id ${eventId}`);
  const hook = (await got.json()) as { id: string; timestamp: string; signature: string; body: string };
  const expected = signature(endpoint.secret, `${hook.id}.${hook.timestamp}.${hook.body}`);
  check(hook.signature.split(' ').includes(expected), `webhook-signature ${hook.signature} is not ${expected}`);
  const sent = JSON.parse(hook.body) as { id: string; type: string; data: { object: { id: number } } };
  check(sent.id === eventId && sent.type === 'pet.created' && sent.data.object.id === pets[0], `the body sent: ${hook.body.slice(0, 80)}`);
  return `${endpointStability}, ${eventsStability}; 201 whsec_; 3 pet.created in ${pages} pages of 1; 3 delivered ${[...new Set(delivered.values())].join()}; v1 signature verified`;
});
