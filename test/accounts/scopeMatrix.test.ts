import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKey, insufficientScope, newAccount, type TestKey } from '../helpers/accounts.js';
import { doc } from '../helpers/schema.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Every operation of openapi.yaml, read from the document itself. */
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
const operations = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
  METHODS.filter((method) => item[method]).map((method) => ({ path, method: method.toUpperCase(), op: item[method] })),
);
const SCOPES: string[] = doc.components.schemas.Scope.enum;

/** A minimal valid body for each operation that takes one. */
const BODIES: Record<string, unknown> = {
  createPet: { name: 'Rex', categoryId: 1 },
  updatePet: { name: 'Rex II' },
  placeOrder: { petId: 1 },
  createApiKey: { name: 'matrix' },
  rollApiKey: { expiresInSeconds: 60 },
  // A public address as a literal: accepted without DNS and without WEBHOOK_ALLOW_PRIVATE_TARGETS.
  createWebhookEndpoint: { url: 'https://93.184.215.14/hook', eventTypes: ['*'] },
  updateWebhookEndpoint: { description: 'matrix' },
};

describe('x-required-scope in openapi.yaml', () => {
  it('is declared by every operation, naming one scope of Scope, and every scope guards some operation', () => {
    expect(operations.length).toBeGreaterThanOrEqual(12);
    const undeclared = operations.filter(({ op }) => !SCOPES.includes(op['x-required-scope'])).map(({ op }) => op.operationId);
    expect(undeclared, 'operations without a known x-required-scope').toEqual([]);
    expect(new Set(operations.map(({ op }) => op['x-required-scope']))).toEqual(new Set(SCOPES));
    expect(doc.info.description).toContain('x-required-scope');
  });

  it('has a body for this test for every operation that takes one', () => {
    const takingBodies = operations.filter(({ op }) => op.requestBody).map(({ op }) => op.operationId);
    expect(Object.keys(BODIES).sort()).toEqual(takingBodies.sort());
  });
});

describe('the scope matrix: a key holding one scope against every operation', () => {
  let server: TestServer;
  const keys = new Map<string, TestKey>();
  beforeAll(async () => {
    server = await startTestServer();
    // An account of its own: key 1 (the server's) is another account's, so the key operations on id 1 are 404, never a scope question.
    const account = await newAccount(server);
    for (const scope of SCOPES) keys.set(scope, await addKey(server, account.id, [scope as never], { name: scope }));
  });
  afterAll(() => server?.close());

  for (const { path, method, op } of operations) {
    const needed: string = op['x-required-scope'];
    for (const scope of SCOPES) {
      const allowed = scope === needed;
      it(`${op.operationId} (${needed}) with only ${scope}: ${allowed ? 'not refused' : '403 insufficient_scope'}`, async () => {
        const url = `/v1${path.replace(/\{\w+\}/g, '1')}`;
        const res = await server.request(url, { method, key: keys.get(scope)!.secret, body: BODIES[op.operationId] });
        if (allowed) {
          // A 403 here may only be the pet's owner rule (pet 1 is another account's), never the scope.
          expect(res.status, `${method} ${url}: ${res.text}`).not.toBe(401);
          if (res.status === 403) expect(res.body.code).toBe('forbidden');
          expect(res.status).toBeLessThan(500);
        } else {
          expect(res.status).toBe(403);
          expect(res.body).toEqual({ code: 'insufficient_scope', message: `This API key lacks the scope ${needed}.`, status: 403 });
          expect(res.headers.get('www-authenticate')).toBe(insufficientScope(needed as never));
        }
      });
    }
  }
});
