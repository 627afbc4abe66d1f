import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.js';
import { enumValues, loadDocument, type OpenApiDocument } from '../../src/openapi/document.js';

const doc = parse(readFileSync('openapi.yaml', 'utf8')) as {
  info: { description: string };
  components: { schemas: { PetName: { pattern: string } } };
};
const served = JSON.stringify(doc);

describe('openapi.yaml as generators read it', () => {
  it('holds no raw U+2028/U+2029, which end a regex literal in generated JavaScript', () => {
    expect(served).not.toMatch(/[\u2028\u2029]/);
  });

  it("PetName's pattern still refuses a name of only U+2028/U+2029 and accepts one around them", () => {
    const pattern = new RegExp(doc.components.schemas.PetName.pattern, 'u');
    expect(pattern.test('\u2028')).toBe(false);
    expect(pattern.test('\u2029\u2028')).toBe(false);
    expect(pattern.test('Rex\u2028')).toBe(true);
  });

  it('gives no query parameter but limit a value Swagger UI would pre-fill (an example or default, on it or its schema): a first list is never filtered', () => {
    const resolve = (node: any): any => (node?.$ref ? resolve(node.$ref.split('/').slice(1).reduce((at: any, key: string) => at[key], doc)) : node);
    const prefilled: string[] = [];
    for (const [path, item] of Object.entries<any>((doc as any).paths)) {
      for (const op of Object.values<any>(item)) {
        for (const param of (op.parameters ?? []).map(resolve)) {
          if (param.in !== 'query' || param.name === 'limit') continue;
          const schema = resolve(param.schema);
          if ([param.example, param.examples, schema?.example, schema?.default].some((v) => v !== undefined)) prefilled.push(`${op.operationId} ${param.name}`);
        }
      }
      void path;
    }
    expect(prefilled).toEqual([]);
  });

  it('keeps the API description to a paragraph, so Swagger UI shows the operations first', () => {
    expect(doc.info.description.trim().split('\n\n')).toHaveLength(1);
  });
});

/*
 * What generators read from the document (issue 37 item 2): the response headers each answer
 * carries, bounded lists and request strings, and no schema keyword that adds nothing.
 */
type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, any> };
const full = doc as unknown as Doc;
const at = (ref: string): any => ref.split('/').slice(1).reduce((node: any, key: string) => node[key], full);
const resolve = (node: any): any => (node?.$ref ? resolve(at(node.$ref)) : node);
const operations = Object.values(full.paths).flatMap((item) => Object.values(item).filter((op) => op?.operationId));
const byId = new Map(operations.map((op) => [op.operationId as string, op]));
const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'RateLimit-Policy', 'RateLimit'];

/** Each operation's handler source, from src/<feature>/handlers.ts: from `async name(` (or `name: async`) to the next one. */
function handlerSources(): Map<string, string> {
  const sources = new Map<string, string>();
  for (const feature of readdirSync('src', { withFileTypes: true })) {
    const file = path.join('src', feature.name, 'handlers.ts');
    if (!feature.isDirectory() || !existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const starts = [...text.matchAll(/^ {4}(?:async )?(\w+)(?:\(|: async)/gm)].filter((m) => byId.has(m[1]!));
    starts.forEach((m, i) => sources.set(m[1]!, text.slice(m.index, starts[i + 1]?.index ?? text.length)));
  }
  return sources;
}
const handlers = handlerSources();
/** The operations whose handler sets a response header: through `reply.header(name, …)`, or for Link through linkNextPage. */
const setting = (pattern: RegExp) => [...handlers].filter(([, source]) => pattern.test(source)).map(([id]) => id).sort();
/** The 2xx and 304 answers of an operation, resolved. */
const successes = (op: any) => Object.entries<any>(op.responses).filter(([code]) => /^(2..|304)$/.test(code)).map(([code, r]) => [code, resolve(r)] as const);

describe('openapi.yaml declares the headers where the service sends them', () => {
  it('finds a handler for every operation in src/*/handlers.ts', () => {
    expect([...handlers.keys()].sort()).toEqual([...byId.keys()].sort());
  });

  it.each([
    ['ETag', /header\('etag'/, ['createPet', 'getPet', 'listPets', 'updatePet']],
    ['Location', /header\('location'/, ['createPet', 'placeOrder']],
    ['Link', /header\('link'|linkNextPage\(/, ['listApiKeys', 'listEvents', 'listOrders', 'listPets', 'listWebhookDeliveries', 'listWebhookEndpoints']],
  ])('declares %s on every 2xx and 304 of each operation whose handler sets it', (header, pattern, expected) => {
    // The list pins what the scan of src finds, so that a scan that finds nothing cannot pass.
    expect(setting(pattern)).toEqual(expected);
    const undeclared = expected.flatMap((id) => successes(byId.get(id)).filter(([, r]) => !r.headers?.[header]).map(([code]) => `${id} ${code}`));
    expect(undeclared).toEqual([]);
  });

  it('declares Link on the 200 of every list (an operation answering an array)', () => {
    const lists = operations.filter((op) => resolve(op.responses['200'])?.content?.['application/json']?.schema?.type === 'array');
    expect(lists.map((op) => op.operationId).sort()).toEqual(setting(/header\('link'|linkNextPage\(/));
    expect(lists.filter((op) => !resolve(op.responses['200']).headers?.Link).map((op) => op.operationId)).toEqual([]);
  });

  it('declares the rate-limit fields on every answer but 431, whose caller is never known', () => {
    const missing: string[] = [];
    for (const op of operations) {
      for (const [code, response] of Object.entries<any>(op.responses)) {
        const headers = Object.keys(resolve(response).headers ?? {});
        const absent = RATE_LIMIT_HEADERS.filter((name) => !headers.includes(name));
        if (code === '431' ? absent.length !== RATE_LIMIT_HEADERS.length : absent.length > 0) missing.push(`${op.operationId} ${code}: ${absent.join(', ')}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

/** Every schema of `type` under `schema` (through $ref, properties, items and compositions), with where it is. */
function strings(schema: any, where: string, found: [string, any][] = [], seen = new Set<string>(), type = 'string'): [string, any][] {
  if (schema?.$ref) {
    if (seen.has(schema.$ref)) return found;
    return strings(at(schema.$ref), where, found, new Set(seen).add(schema.$ref), type);
  }
  if (!schema) return found;
  if (schema.type === type) found.push([where, schema]);
  for (const [name, property] of Object.entries<any>(schema.properties ?? {})) strings(property, `${where}.${name}`, found, seen, type);
  if (schema.items) strings(schema.items, `${where}[]`, found, seen, type);
  for (const part of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) strings(part, where, found, seen, type);
  return found;
}

/** Every schema of `type` in the requests (parameters and bodies) of every operation, as `operationId where`. */
function inRequests(type: string): [string, any][] {
  return operations.flatMap((op) => {
    const found: [string, any][] = [];
    for (const param of (op.parameters ?? []).map(resolve)) strings(param.schema, `${param.in} ${param.name}`, found, new Set(), type);
    for (const [mediaType, content] of Object.entries<any>(resolve(op.requestBody)?.content ?? {})) strings(content.schema, `body (${mediaType})`, found, new Set(), type);
    return found.map(([where, schema]): [string, any] => [`${op.operationId} ${where}`, schema]);
  });
}

describe('openapi.yaml bounds what generators and validators read', () => {
  it('gives every request string a maxLength (an enum is bounded by its values)', () => {
    const unbounded: string[] = [];
    let checked = 0;
    for (const op of operations) {
      const found: [string, any][] = [];
      for (const param of (op.parameters ?? []).map(resolve)) strings(param.schema, `${param.in} ${param.name}`, found);
      for (const [mediaType, content] of Object.entries<any>(resolve(op.requestBody)?.content ?? {})) strings(content.schema, `body (${mediaType})`, found);
      checked += found.length;
      unbounded.push(...found.filter(([, s]) => !s.enum && s.maxLength === undefined).map(([where]) => `${op.operationId} ${where}`));
    }
    // Names, URLs, descriptions, cursors, Idempotency-Key, If-Match, If-None-Match and more: a walk that finds few is broken.
    expect(checked).toBeGreaterThan(30);
    expect(unbounded).toEqual([]);
  });

  it('gives every request string that is no enum a pattern, and that pattern refuses C0 and C1 controls', () => {
    const found = inRequests('string').filter(([, s]) => !s.enum);
    expect(found.length).toBeGreaterThan(20);
    expect(found.filter(([, s]) => s.pattern === undefined).map(([where]) => where)).toEqual([]);
    // Values each pattern takes (fast-check draws them from it), with a control character put inside, no longer match.
    const leaky = found.filter(([, s]) => {
      const pattern = new RegExp(s.pattern, 'u');
      const samples = fc.sample(fc.stringMatching(pattern).filter((v) => [...v].length >= 2), { numRuns: 20, seed: 7 });
      return samples.some((v) => ['\x00', '\n', '\x1f', '\x7f', '\x85', '\x9f', '\u202e'].some((c) => pattern.test([...v].toSpliced(1, 0, c).join(''))));
    });
    expect(leaky.map(([where]) => where)).toEqual([]);
  });

  it('gives every request integer a format', () => {
    const found = inRequests('integer');
    expect(found.length).toBeGreaterThan(5);
    expect(found.filter(([, s]) => s.format === undefined).map(([where]) => where)).toEqual([]);
  });

  it('bounds ScopeList by the number of scopes, each at most once', () => {
    const { ScopeList, Scope } = full.components.schemas;
    expect([ScopeList.uniqueItems, ScopeList.maxItems]).toEqual([true, Scope.enum.length]);
  });

  it("gives every list's 200 array a maxItems equal to limit's maximum", () => {
    const lists = operations.filter((op) => resolve(op.responses['200'])?.content?.['application/json']?.schema?.type === 'array');
    expect(lists).toHaveLength(6);
    for (const op of lists) {
      const limit = (op.parameters ?? []).map(resolve).find((param: any) => param.name === 'limit' && param.in === 'query');
      expect(limit, op.operationId).toBeDefined();
      expect(resolve(op.responses['200']).content['application/json'].schema.maxItems, op.operationId).toBe(limit.schema.maximum);
    }
  });

  it('has no additionalProperties: true, which OpenAPI 3.0 assumes anyway (swagger-codegen Go then names an undefined ModelMap)', () => {
    expect(served).not.toContain('"additionalProperties":true');
  });
});

describe('enumValues: a string enum of the document, read at run time', () => {
  it("gives Plan's values in the document's order, the same set as generated/openapi.ts's type", () => {
    // `satisfies` fails to compile if the generated type gains or loses a plan; the values come from openapi.yaml.
    const typed = { free: true, pro: true, business: true, enterprise: true } satisfies Record<components['schemas']['Plan'], true>;
    expect(enumValues(loadDocument(), 'Plan')).toEqual(Object.keys(typed));
  });

  it('reads the document it is given, and refuses a schema that is no enum of strings', () => {
    const edited = { ...loadDocument(), components: { schemas: { Plan: { type: 'string', enum: ['free', 'gold'] } } } } as OpenApiDocument;
    expect(enumValues(edited, 'Plan')).toEqual(['free', 'gold']);
    expect(() => enumValues(loadDocument(), 'Pet')).toThrow('openapi.yaml: components.schemas.Pet is not an enum of strings');
    expect(() => enumValues({ ...edited, components: { schemas: { Plan: { enum: [] } } } }, 'Plan')).toThrow('not an enum of strings');
  });
});
