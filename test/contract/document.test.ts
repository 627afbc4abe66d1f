import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

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
