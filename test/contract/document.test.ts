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

  it('keeps the API description to a paragraph, so Swagger UI shows the operations first', () => {
    expect(doc.info.description.trim().split('\n\n')).toHaveLength(1);
  });
});
