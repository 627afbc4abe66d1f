import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { createPet } from '../helpers/pets.js';
import { storedState } from '../helpers/storedState.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/*
 * Free text that pages and logs show (pet names, key names, webhook descriptions) cannot carry
 * control characters or bidirectional controls, which would break or reorder what a reader sees:
 * the body parser refuses them in every string of every body (api/bodyStrings.ts) with 400
 * validation_failed naming the field and the character, before any handler.
 */
let server: TestServer;
let petId: number;
let endpointId: number;
beforeAll(async () => {
  server = await startTestServer(WEBHOOK_TEST_ENV);
  petId = (await createPet(server)).id;
  endpointId = (await createEndpoint(server, server.key, 'https://example.com/hook')).id;
});
afterAll(() => server?.close());

const stored = () => storedState(server);

/** Each refused character and how the message names it. */
const CHARACTERS: Array<[string, string]> = [
  ['\u001b', 'U+001B (a control character)'], // ESC: terminal escape sequences
  ['\u0001', 'U+0001 (a control character)'],
  ['\u202e', 'U+202E (a bidirectional control)'], // RIGHT-TO-LEFT OVERRIDE
  ['\u2066', 'U+2066 (a bidirectional control)'], // LEFT-TO-RIGHT ISOLATE
  ['\u0085', 'U+0085 (a control character)'], // NEXT LINE (C1)
];

const merge = { 'content-type': 'application/merge-patch+json' };
/** [operation, method, path, body holding `c`, the field the message names, extra headers]. */
const fields = (c: string, i: number): Array<[string, string, string, unknown, string, Record<string, string>?]> => [
  ['createPet', 'POST', '/v1/pets', { name: `Re${c}x`, categoryId: 1 }, 'body/name', { 'idempotency-key': `controls-${i}` }],
  ['updatePet', 'PATCH', `/v1/pets/${petId}`, { name: `${c}Rex` }, 'body/name', merge],
  ['createApiKey', 'POST', '/v1/account/api-keys', { name: `ci${c}` }, 'body/name'],
  ['createWebhookEndpoint', 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/h', eventTypes: ['*'], description: `a${c}b` }, 'body/description'],
  ['updateWebhookEndpoint', 'PATCH', `/v1/webhook-endpoints/${endpointId}`, { description: `paid${c}gnp.exe` }, 'body/description'],
];

describe('control and bidirectional characters in free text', () => {
  it('are 400 validation_failed naming the field and the character, in a pet name, a key name and a webhook description, and nothing is stored', async () => {
    const before = await stored();
    const answers: unknown[] = [];
    for (const [i, [c, named]] of CHARACTERS.entries()) {
      for (const [operation, method, path, body, field, headers] of fields(c, i)) {
        const res = await server.request(path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
        answers.push([operation, named, res.status, res.body]);
        expect([operation, res.status, res.body]).toEqual([operation, 400, { code: 'validation_failed', message: `${field} must not contain ${named}`, status: 400 }]);
      }
    }
    expect(answers).toHaveLength(25);
    expect(await stored()).toEqual(before);
  });

  it('tab and newline are refused too (descriptions are one line), and so is any such character in a property name', async () => {
    const before = await stored();
    const tab = await server.request(`/v1/webhook-endpoints/${endpointId}`, { method: 'PATCH', body: { description: 'a\tb' }, headers: merge });
    expect(tab.body).toEqual({ code: 'validation_failed', message: 'body/description must not contain U+0009 (a control character)', status: 400 });
    const newline = await server.request('/v1/account/api-keys', { body: { name: 'line one\nline two' } });
    expect(newline.body).toEqual({ code: 'validation_failed', message: 'body/name must not contain U+000A (a control character)', status: 400 });
    const key = await server.request('/v1/account/api-keys', { body: { name: 'ci', ['x\u200f']: 1 } });
    expect(key.body).toEqual({ code: 'validation_failed', message: 'body has a property name that contains U+200F (a bidirectional control)', status: 400 });
    expect(await stored()).toEqual(before);
  });

  it('leaves other text alone: letters of every script, emoji with joiners, U+00A0 and U+200D', async () => {
    const name = 'Ünïcødé ռեքս レックス رکس 🐕‍🦺 Rex\u00a0II';
    const pet = await server.request('/v1/pets', { body: { name, categoryId: 1 } });
    expect([pet.status, pet.body.name]).toEqual([201, name]);
    const described = await server.request(`/v1/webhook-endpoints/${endpointId}`, { method: 'PATCH', body: { description: name }, headers: merge });
    expect([described.status, described.body.description]).toEqual([200, name]);
  });
});
