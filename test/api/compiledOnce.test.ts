import { describe, expect, it } from 'vitest';
import { makeAjv } from '../../src/api/validation.js';
import { loadDocument } from '../../src/openapi/document.js';

/** What each app build shares with the builds before it in one process (a test run builds one app per file). */
describe('compiled once per process', () => {
  const schema = { type: 'object', properties: { limit: { type: 'integer', default: 20 } } };

  it('an equal schema compiled by another app’s ajv is the validator compiled before; another schema is compiled anew', () => {
    const first = makeAjv().compile(structuredClone(schema));
    expect(makeAjv().compile(structuredClone(schema))).toBe(first);
    expect(makeAjv().compile({ ...schema, required: ['limit'] })).not.toBe(first);
  });

  it('requests’ and responses’ validators stay apart: only the requests’ fill in defaults', () => {
    const request = makeAjv().compile(structuredClone(schema));
    const response = makeAjv({ useDefaults: false }).compile(structuredClone(schema));
    expect(response).not.toBe(request);
    const [a, b]: Array<Record<string, unknown>> = [{}, {}];
    expect([request(a), response(b)]).toEqual([true, true]);
    expect([a, b]).toEqual([{ limit: 20 }, {}]);
  });

  it('each caller of loadDocument gets a copy of its own: a change to one is not in the next', () => {
    const doc = loadDocument();
    doc.paths = {};
    expect(Object.keys(loadDocument().paths).length).toBeGreaterThan(0);
  });
});
