import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAllowedAddress } from '../../src/webhooks/publicAddress.js';
import { postWebhook } from '../../src/webhooks/send.js';
import { checkedLookup, checkTargetUrl, literalAddressAllowed, TargetNotAllowed } from '../../src/webhooks/targets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { createEndpoint, startReceiver, type Receiver } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';

// A public address as a literal, so that no DNS is needed to accept it.
const PUBLIC_URL = 'https://93.184.215.14/hook';
/** How a delivery refused for its address ends: naming what lifts the rule in development, as the 400 at creation does. */
const DELIVERY_HINT = ' (not a public address; for a receiver on your own machine in development, see docs/WEBHOOKS.md#local-development: WEBHOOK_ALLOW_PRIVATE_TARGETS=true)';

/** Every form refused, each at createWebhookEndpoint, at updateWebhookEndpoint and at connect time: literals and localhost, so no outside DNS. */
const REFUSED: Array<[what: string, url: string]> = [
  ['loopback', 'http://127.0.0.1/x'],
  ['loopback, as one decimal number', 'https://2130706433/x'],
  ['loopback, by name', 'http://localhost:8080/x'],
  ['private 10/8', 'http://10.1.2.3/x'],
  ['private 172.16/12', 'http://172.16.0.9/x'],
  ['private 192.168/16', 'http://192.168.1.1/x'],
  ['shared (CGNAT)', 'http://100.64.0.1/x'],
  ['link-local (cloud metadata)', 'http://169.254.169.254/latest/meta-data/'],
  ['unspecified', 'http://0.0.0.0/x'],
  ['multicast', 'http://224.0.0.1/x'],
  ['broadcast', 'http://255.255.255.255/x'],
  ['reserved 240/4', 'http://240.0.0.1/x'],
  ['documentation TEST-NET-1', 'http://192.0.2.1/x'],
  ['documentation TEST-NET-2', 'http://198.51.100.7/x'],
  ['documentation TEST-NET-3', 'http://203.0.113.9/x'],
  ['6to4 relay anycast', 'http://192.88.99.1/x'],
  ['IPv6 loopback', 'http://[::1]/x'],
  ['IPv6 unspecified', 'http://[::]/x'],
  ['unique-local fc00::', 'http://[fc00::1]/x'],
  ['unique-local fd00::', 'http://[fd00::1]/x'],
  ['IPv6 link-local', 'http://[fe80::1]/x'],
  ['IPv6 multicast', 'http://[ff02::1]/x'],
  ['IPv6 documentation', 'http://[2001:db8::1]/x'],
  ['IPv4-mapped loopback', 'http://[::ffff:127.0.0.1]/x'],
  ['IPv4-compatible loopback', 'http://[::7f00:1]/x'],
  ['SIIT loopback', 'http://[::ffff:0:127.0.0.1]/x'],
  ['6to4 of loopback', 'http://[2002:7f00:1::1]/x'],
  ['6to4 of private', 'http://[2002:a00:1::1]/x'],
  ['NAT64 well-known of loopback', 'http://[64:ff9b::7f00:1]/x'],
  ['NAT64 local-use of loopback', 'http://[64:ff9b:1::7f00:1]/x'],
  ['NAT64 local-use, even of a public IPv4', 'http://[64:ff9b:1::5db8:d822]/x'],
  ['Teredo, client loopback', 'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x'],
  ['Teredo, even server and client public', 'http://[2001:0:4136:e378:8000:63bf:a247:27dd]/x'],
];

/** Public unicast addresses, IPv4 inside IPv6 forms included: accepted everywhere. */
const ACCEPTED = [
  'https://93.184.216.34/hook',
  'https://[2606:2800:220:1:248:1893:25c8:1946]/hook',
  'https://[::ffff:93.184.216.34]/hook',
  'https://[2002:5db8:d822::1]/hook',
  'https://[64:ff9b::5db8:d822]/hook',
];

const hostOf = (url: string) => new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
/** What checkedLookup hands the socket for a host (a literal resolves to itself), or its error code. */
const lookedUp = (host: string) =>
  new Promise<string>((resolve) => checkedLookup(host, { all: true }, (err, found) => resolve(err ? String(err.code) : (found as Array<{ address: string }>).map((a) => a.address).join())));

describe('SSRF: webhooks never reach loopback, private, link-local or reserved addresses', () => {
  let server: TestServer;
  let key: string;
  let hook: Receiver;

  beforeAll(async () => {
    // No WEBHOOK_ALLOW_PRIVATE_TARGETS; an endpoint is disabled at its first failure.
    server = await startTestServer({ WEBHOOK_RETRY_DELAYS_SECONDS: '0', WEBHOOK_DISABLE_AFTER_SECONDS: '0', WEBHOOK_POLL_SECONDS: '0.5', WEBHOOK_TIMEOUT_SECONDS: '2' });
    key = await server.createKey('business');
    hook = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await hook?.close();
  });

  it('createWebhookEndpoint refuses each form with 400 webhook_url_not_allowed, and stores nothing', async () => {
    const answers: unknown[] = [];
    for (const [what, url] of REFUSED) {
      const res = await server.request('/v1/webhook-endpoints', { key, body: { url, eventTypes: ['*'] } });
      answers.push([what, res.status, res.body.code]);
    }
    expect(answers).toEqual(REFUSED.map(([what]) => [what, 400, 'webhook_url_not_allowed']));
    expect((await server.request('/v1/webhook-endpoints', { key })).body).toEqual([]);
  });

  it('the refusal points to local development, and does not say what a name resolves to', async () => {
    const res = await server.request('/v1/webhook-endpoints', { key, body: { url: 'http://localhost:8080/x', eventTypes: ['*'] } });
    expect(res.body.message).toContain('see docs/WEBHOOKS.md#local-development: WEBHOOK_ALLOW_PRIVATE_TARGETS=true');
    expect(res.body.message).toContain('localhost');
    expect(res.body.message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it('updateWebhookEndpoint refuses each form with 400 webhook_url_not_allowed, leaving the URL as it was', async () => {
    const endpoint = await createEndpoint(server, key, PUBLIC_URL);
    const answers: unknown[] = [];
    for (const [what, url] of REFUSED) {
      const res = await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'PATCH', body: { url } });
      answers.push([what, res.status, res.body.code]);
    }
    expect(answers).toEqual(REFUSED.map(([what]) => [what, 400, 'webhook_url_not_allowed']));
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body.url).toBe(PUBLIC_URL);
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'DELETE' })).status).toBe(204);
  });

  it('at connect time each form is refused: by the literal check, by the lookup the socket uses, and so by postWebhook without connecting', async () => {
    const literals = REFUSED.filter(([, url]) => hostOf(url) !== 'localhost');
    expect(literals.filter(([, url]) => literalAddressAllowed(new URL(url))).map(([what]) => what)).toEqual([]);
    const lookups: unknown[] = [];
    const posts: unknown[] = [];
    for (const [what, url] of REFUSED) {
      lookups.push([what, await lookedUp(hostOf(url))]);
      const attempt = await postWebhook(url, '{}', {}, { timeoutMs: 1000, allowPrivate: false });
      posts.push([what, attempt.status, attempt.error?.startsWith('address not allowed: '), attempt.error?.endsWith(DELIVERY_HINT)]);
    }
    expect(lookups).toEqual(REFUSED.map(([what]) => [what, 'EADDRNOTALLOWED']));
    expect(posts).toEqual(REFUSED.map(([what]) => [what, null, true, true]));
  });

  it('accepts public unicast addresses, IPv4 inside IPv6 included, when set and at connect time', async () => {
    const statuses: unknown[] = [];
    for (const url of ACCEPTED) {
      const res = await server.request('/v1/webhook-endpoints', { key, body: { url, eventTypes: ['*'] } });
      statuses.push([url, res.status]);
      if (res.status === 201) expect((await server.request(`/v1/webhook-endpoints/${res.body.id}`, { key, method: 'DELETE' })).status).toBe(204);
    }
    expect(statuses).toEqual(ACCEPTED.map((url) => [url, 201]));
    expect(ACCEPTED.filter((url) => !literalAddressAllowed(new URL(url)))).toEqual([]);
    const lookups: unknown[] = [];
    for (const url of ACCEPTED) lookups.push(await lookedUp(hostOf(url)));
    expect(lookups).toEqual(ACCEPTED.map(hostOf));
  });

  it('refuses a URL with a user name or password at create and update, without saying them, private targets allowed or not', async () => {
    const withCredentials = ['https://alice:hunter2@93.184.215.14/hook', 'https://alice@93.184.215.14/hook', 'https://:hunter2@93.184.215.14/hook'];
    const endpoint = await createEndpoint(server, key, PUBLIC_URL);
    const answers: unknown[] = [];
    for (const url of withCredentials) {
      const created = await server.request('/v1/webhook-endpoints', { key, body: { url, eventTypes: ['*'] } });
      const updated = await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'PATCH', body: { url } });
      for (const res of [created, updated]) answers.push([url, res.status, res.body.code, /alice|hunter2/.test(res.text)]);
    }
    expect(answers).toEqual(withCredentials.flatMap((url) => Array(2).fill([url, 400, 'webhook_url_not_allowed', false])));
    expect((await server.request('/v1/webhook-endpoints', { key })).body.map((e: { url: string }) => e.url)).toEqual([PUBLIC_URL]);
    await expect(checkTargetUrl('http://alice:hunter2@localhost:8080/x', true)).rejects.toThrow(TargetNotAllowed);
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'DELETE' })).status).toBe(204);
  });

  it('never sends to a URL stored with credentials before they were refused, private targets allowed or not, and does not say them', async () => {
    const receiver = await startReceiver();
    try {
      const url = receiver.url.replace('http://', 'http://alice:hunter2@');
      const attempts = [];
      for (const allowPrivate of [true, false]) attempts.push(await postWebhook(url, '{}', {}, { timeoutMs: 2000, allowPrivate }));
      expect(attempts.map((a) => [a.status, a.error])).toEqual(Array(2).fill([null, 'URL not allowed: it contains a user name or password']));
      expect(receiver.received).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('checks again at delivery, against the address connected to: a URL whose host now resolves to loopback gets nothing, nor one stored with credentials, and each endpoint is disabled', async () => {
    // As if DNS changed after creation, or the URL was stored before credentials were refused: endpoints made
    // with a public URL, then pointed at the receiver behind the API's back.
    const byName = await createEndpoint(server, key, PUBLIC_URL);
    const byAddress = await createEndpoint(server, key, PUBLIC_URL);
    const withCredentials = await createEndpoint(server, key, PUBLIC_URL);
    const port = new URL(hook.url).port;
    const setUrl = (id: number, url: string) => server.app.database.pool.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [id, url]);
    await setUrl(byName.id, `http://localhost:${port}/hook`);
    await setUrl(byAddress.id, `http://127.0.0.1:${port}/hook`);
    await setUrl(withCredentials.id, `http://alice:hunter2@127.0.0.1:${port}/hook`);
    const ids = [byName.id, byAddress.id, withCredentials.id];
    expect((await server.request('/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status).toBe(201);
    const status = async (id: number) => (await server.request(`/v1/webhook-endpoints/${id}`, { key })).body;
    expect(await waitFor(async () => (await Promise.all(ids.map(status))).every((e) => e.status === 'disabled'), 20_000)).toBe(true);
    const refusedAddress = /^address not allowed: .* \(not a public address; for a receiver on your own machine in development, see docs\/WEBHOOKS\.md#local-development: WEBHOOK_ALLOW_PRIVATE_TARGETS=true\)$/;
    const expected: Array<[number, RegExp]> = [[byName.id, refusedAddress], [byAddress.id, refusedAddress], [withCredentials.id, /^URL not allowed: it contains a user name or password$/]];
    for (const [id, error] of expected) {
      const log = (await server.request(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body;
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ attempt: 1, responseStatus: null, error: expect.stringMatching(error) });
      expect((await status(id)).disabledReason).toMatch(new RegExp(`^Every delivery failed from .* for 0 seconds; the last: ${error.source.replace(/^\^|\$$/g, '')}`));
    }
    expect(hook.received).toHaveLength(0);
  });

  it('isAllowedAddress takes only what net.isIP calls an address', () => {
    expect(['8.8.8.8', '2606:4700::1111'].map(isAllowedAddress)).toEqual([true, true]);
    // Forms a URL parser turns into 127.0.0.1, and names: not addresses here, so never judged as public ones.
    expect(['0x7f.1', '2130706433', '127.1', 'not an address', '', 'localhost'].filter(isAllowedAddress)).toEqual([]);
  });
});
