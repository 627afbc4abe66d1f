import { expect } from 'vitest';
import { deref, doc, resolve, validatorFor } from './schema.js';

/**
 * Checks a real response against openapi.yaml: the status is documented for the
 * operation, the body matches the schema, and every required header is present and valid.
 */
const operations = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
  Object.entries<any>(item).flatMap(([method, op]) => {
    const regex = new RegExp(`^/v1${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    // HEAD is answered wherever GET is, as GET (the document says so in its description).
    const methods = method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()];
    return methods.map((m) => ({ method: m, regex, op }));
  }),
);

export interface ContractResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export function expectMatchesContract(method: string, url: string, res: ContractResponse): void {
  const path = new URL(url, 'http://x').pathname;
  const found = operations.find((o) => o.method === method && o.regex.test(path));
  const where = `${method} ${path} -> ${res.status}`;
  let response: any;
  if (found) {
    response = resolve(found.op.responses[String(res.status)]);
    expect(response, `${where} is not documented in openapi.yaml`).toBeDefined();
  } else {
    // Not an operation: a known path with another method is 405 with Allow, anything else 404; both the Error body.
    const allowed = operations.filter((o) => o.regex.test(path)).map((o) => o.method);
    if (allowed.length > 0) {
      expect(res.status, `${where}: a known path with another method answers 405`).toBe(405);
      expect(res.headers.get('allow'), where).toBe(allowed.join(', '));
    } else {
      expect(res.status, `${where}: unknown routes answer 404`).toBe(404);
    }
    response = { content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } }, headers: {} };
  }
  const media = response.content?.['application/json'];
  if (media) {
    expect(res.headers.get('content-type'), where).toMatch(/^application\/json/);
    const validate = validatorFor(`${found?.op.operationId}:${res.status}`, media.schema);
    expect(validate(res.body) ? [] : validate.errors, `${where}: body does not match the schema`).toEqual([]);
    if (res.status >= 400) expect((res.body as { status: number }).status, where).toBe(res.status);
  }
  for (const [name, header] of Object.entries<any>(response.headers ?? {})) {
    const h = resolve(header);
    const value = res.headers.get(name);
    if (h.required) expect(value, `${where}: missing required header ${name}`).not.toBeNull();
    if (value !== null) {
      const schema = deref(h.schema);
      const parsed = schema.type === 'integer' ? Number(value) : value;
      const validate = validatorFor(`header:${name}`, schema);
      expect(validate(parsed) ? [] : validate.errors, `${where}: header ${name}=${value}`).toEqual([]);
    }
  }
}
