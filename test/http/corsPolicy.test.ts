import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { methodNotAllowedRoutes } from '../../src/api/methodNotAllowed.js';
import corsPlugin from '../../src/http/cors.js';
import { corsPolicy } from '../../src/http/corsPolicy.js';
import { loadDocument, type OpenApiDocument } from '../../src/openapi/document.js';
import { ALLOWED_HEADERS, EXPOSED_HEADERS } from '../helpers/corsHeaders.js';

const APP = 'https://app.example';

describe('the CORS policy, derived from openapi.yaml', () => {
  const policy = corsPolicy(loadDocument(), '/v1');

  it('allows on each path the methods the document gives it, HEAD wherever GET is', () => {
    expect(policy.methods.get('/v1/pets')).toEqual(['GET', 'HEAD', 'POST']);
    expect(policy.methods.get('/v1/pets/:petId')).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE']);
    expect(policy.methods.get('/v1/account/api-keys/:keyId')).toEqual(['DELETE']);
    expect(policy.methods.get('/v1/webhook-endpoints/:endpointId')).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE']);
    expect(policy.methods.get('/v1/store/orders/:orderId/complete')).toEqual(['POST']);
    // Every path of the document, and nothing else (docs, probes).
    expect(policy.methods.size).toBe(Object.keys(loadDocument().paths).length);
  });

  it("allows the document's header parameters, the key, the media type and the request id", () => {
    expect(policy.allowedHeaders).toEqual(ALLOWED_HEADERS);
  });

  it('exposes every response header the document declares', () => {
    expect(policy.exposedHeaders).toEqual(EXPOSED_HEADERS);
  });
});

describe('a new operation in the document needs no CORS edit', () => {
  /** openapi.yaml with a `put` on /pets/{petId} that takes and answers a header nothing else has. */
  function withReplacePet(): OpenApiDocument {
    const doc = structuredClone(loadDocument());
    doc.paths['/pets/{petId}']!.put = {
      operationId: 'replacePet',
      parameters: [{ name: 'X-Pet-Note', in: 'header', schema: { type: 'string' } }],
      responses: { '200': { description: 'Replaced.', headers: { 'X-Pet-Revision': { schema: { type: 'string' } } } } },
    };
    return doc;
  }

  it('derives PUT, its request header and its response header', () => {
    const policy = corsPolicy(withReplacePet(), '/v1');
    expect(policy.methods.get('/v1/pets/:petId')).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE', 'PUT']);
    expect(policy.methods.get('/v1/pets')).toEqual(['GET', 'HEAD', 'POST']);
    expect(policy.allowedHeaders).toContain('X-Pet-Note');
    expect(policy.exposedHeaders).toContain('X-Pet-Revision');
  });

  it('answers a preflight for PUT on that path, through the plugin as the app registers it', async () => {
    const doc = withReplacePet();
    const app = Fastify();
    try {
      // The rate-limit plugin's decoration, which a preflight calls to show its address's quota: none here.
      app.decorate('showLimits', () => {});
      await app.register(corsPlugin, { origins: [APP], policy: corsPolicy(doc, '/v1') });
      // The API's 405 routes give each path of the document an OPTIONS route, as in the app.
      await app.register(async (api) => methodNotAllowedRoutes(api, doc), { prefix: '/v1' });
      const res = await app.inject({
        method: 'OPTIONS',
        url: '/v1/pets/7',
        headers: { origin: APP, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'x-pet-note' },
      });
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP);
      expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, PATCH, DELETE, PUT');
      expect(String(res.headers['access-control-allow-headers']).split(', ')).toContain('X-Pet-Note');
    } finally {
      await app.close();
    }
  });
});
