// PROPERTY_RUNS (see api.test.ts; default 25) scales the generator checks here too: 80 samples
// a run, never fewer than the 2000 the coverage checks below are sized for (about 0.5 s).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validatorFor } from '../helpers/schema.js';
import { invalid, invalidNewPet, newPet, valid, validListQuery, validNewPet, limitParam, statusParam } from './arbitraries.js';

const runsSetting = process.env.PROPERTY_RUNS || '25';
if (!/^[1-9][0-9]*$/.test(runsSetting)) throw new Error(`PROPERTY_RUNS must be a positive integer, not ${JSON.stringify(runsSetting)}`);
const NUM_RUNS = Math.max(2000, 80 * Number(runsSetting));

/** The generators are only as honest as this: valid means valid to openapi.yaml, invalid means not. */
describe('arbitraries read from openapi.yaml', () => {
  const isNewPet = validatorFor('arb:NewPet', newPet);

  it('generates bodies the document accepts', () => {
    fc.assert(
      fc.property(validNewPet, (body) => {
        expect(isNewPet(body) ? [] : isNewPet.errors).toEqual([]);
        expect(body.name.isWellFormed()).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('generates bodies the document rejects, each for the reason it names', () => {
    const reasons = new Set<string>();
    fc.assert(
      fc.property(invalidNewPet, ({ value, why }) => {
        reasons.add(why.replace(/^\w+: /, ''));
        expect(isNewPet(value), `${why}: ${JSON.stringify(value)}`).toBe(false);
        // Broken in the named way only: never text that is not text.
        expect(JSON.stringify(value).isWellFormed()).toBe(true);
      }),
      { numRuns: NUM_RUNS },
    );
    // Every class of breakage turns up in a run of this size (2000 or more).
    for (const why of ['wrong type', 'too short', 'too long', 'does not match the pattern', 'below minimum', 'above maximum', 'not in the enum', 'unknown property', 'not an object']) {
      expect(reasons).toContain(why);
    }
  });

  it('covers the edges: the longest name, astral characters, the largest category id', () => {
    const samples = fc.sample(validNewPet, { numRuns: 3000, seed: 42 });
    expect(samples.some((p) => [...p.name].length === 200)).toBe(true);
    expect(samples.some((p) => /[\u{10000}-\u{10FFFF}]/u.test(p.name))).toBe(true);
    expect(samples.some((p) => p.categoryId === Number.MAX_SAFE_INTEGER)).toBe(true);
    expect(samples.some((p) => p.status === undefined)).toBe(true);
  });

  it('generates query parameters the document accepts', () => {
    const limitOk = validatorFor('arb:limit', limitParam);
    const statusOk = validatorFor('arb:status', statusParam);
    fc.assert(
      fc.property(validListQuery, (q) => {
        if (q.limit !== undefined) expect(limitOk(q.limit)).toBe(true);
        if (q.status !== undefined) expect(statusOk(q.status)).toBe(true);
      }),
    );
  });

  it('refuses schema keywords it does not understand rather than ignoring them', () => {
    expect(() => valid({ type: 'string', format: 'email', uniqueItems: true })).toThrow(/uniqueItems/);
    expect(() => invalid({ type: 'array', items: {} })).toThrow(/items/);
  });
});
