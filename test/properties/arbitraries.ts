import fc from 'fast-check';
import { componentSchema, parameterSchema } from '../helpers/schema.js';

/**
 * fast-check arbitraries read from openapi.yaml: valid values of a schema, and values
 * that break it in one way. Only the keywords below are understood; any other keyword
 * throws, so a change to the document cannot leave the generator silently behind.
 */
const UNDERSTOOD = new Set([
  'type', 'format', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'enum',
  'properties', 'required', 'additionalProperties', 'allOf', 'default', 'description', 'example',
]);

type Schema = Record<string, any>;

function checkKeywords(schema: Schema): void {
  for (const keyword of Object.keys(schema)) {
    if (!UNDERSTOOD.has(keyword)) throw new Error(`arbitraries.ts does not understand the schema keyword "${keyword}"`);
  }
}

/** Folds `allOf` into one schema (the document uses it only to add a default to a $ref). */
function flatten(schema: Schema): Schema {
  checkKeywords(schema);
  if (!schema.allOf) return schema;
  const { allOf, ...rest } = schema;
  return (allOf as Schema[]).reduce<Schema>((acc, part) => ({ ...flatten(part), ...acc }), rest);
}

/** A printable character from anywhere in Unicode: no C0/C1 controls, no surrogates. */
const printable = fc
  .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xd7ff }), fc.integer({ min: 0xe000, max: 0x10ffff }))
  .map((cp) => String.fromCodePoint(cp));

/** JSON Schema lengths count code points, as Postgres' char_length does. */
const codePoints = (s: string) => [...s].length;

function validString(schema: Schema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 1000;
  const pattern = schema.pattern ? new RegExp(schema.pattern, 'u') : undefined;
  const fits = (s: string) => codePoints(s) >= min && codePoints(s) <= max && (!pattern || pattern.test(s));
  const candidates = [
    // Any Unicode scalar value (no lone surrogates: they are not text), biased to small ones.
    fc.string({ unit: 'binary', minLength: min, maxLength: Math.min(max, 40) }),
    // Emoji sequences, combining marks and other multi-unit graphemes.
    fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 20) }),
    // Exactly the longest allowed, drawn from the whole range of printable characters.
    fc.string({ unit: printable, minLength: max, maxLength: max }),
  ];
  if (pattern) candidates.push(fc.stringMatching(pattern, { size: 'small' }));
  return fc.oneof(...candidates).filter(fits);
}

function validInteger(schema: Schema): fc.Arbitrary<number> {
  const min: number = schema.minimum ?? Number.MIN_SAFE_INTEGER;
  const max: number = schema.maximum ?? Number.MAX_SAFE_INTEGER;
  return fc.oneof(
    fc.constantFrom(min, max),
    fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }),
    fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number),
  );
}

/** Values that satisfy the schema. */
export function valid(input: Schema): fc.Arbitrary<unknown> {
  const schema = flatten(input);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      return validString(schema);
    case 'integer':
      return validInteger(schema);
    case 'object': {
      if (schema.additionalProperties !== false) throw new Error('only closed objects are generated');
      const props = Object.fromEntries(Object.entries<Schema>(schema.properties).map(([k, s]) => [k, valid(s)]));
      return fc.record(props, { requiredKeys: schema.required ?? [] });
    }
    default:
      throw new Error(`arbitraries.ts cannot generate type ${schema.type}`);
  }
}

const CONTROL = [...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)), '\x7f'];
const wrongTypes = (...keep: unknown[]) =>
  fc.constantFrom<unknown>('7', 7, 1.5, true, false, null, [], {}, [1], { a: 1 }).filter((v) => !keep.includes(typeof v));

export interface Broken {
  value: unknown;
  why: string;
}

/** Values that break the schema, each in one named way. */
export function invalid(input: Schema): fc.Arbitrary<Broken> {
  const schema = flatten(input);
  const named = (why: string) => (value: unknown): Broken => ({ value, why });
  if (schema.enum) {
    return fc.oneof(
      fc.string({ maxLength: 12 }).filter((s) => !schema.enum.includes(s)).map(named('not in the enum')),
      fc.constantFrom(...schema.enum).map((s: string) => s.toUpperCase()).map(named('not in the enum (case)')),
      wrongTypes('string').map(named('wrong type')),
    );
  }
  switch (schema.type) {
    case 'string': {
      const cases: Array<fc.Arbitrary<Broken>> = [wrongTypes('string').map(named('wrong type'))];
      if (schema.minLength) cases.push(fc.constant('').map(named('too short')));
      if (schema.maxLength !== undefined) {
        cases.push(
          fc.integer({ min: schema.maxLength + 1, max: schema.maxLength + 300 }).map((n) => 'x'.repeat(n)).map(named('too long')),
        );
      }
      if (schema.pattern) {
        const pattern = new RegExp(schema.pattern, 'u');
        const spliced = fc
          .tuple(valid(schema) as fc.Arbitrary<string>, fc.constantFrom(...CONTROL), fc.nat())
          .map(([s, c, at]) => {
            const chars = [...s]; // split between code points, never inside a surrogate pair
            chars.splice(at % (chars.length + 1), 0, c);
            return chars.join('');
          });
        const blank = fc.string({ unit: fc.constantFrom(' ', '\t', '\u00a0', '\u2003', '\u3000'), minLength: 1, maxLength: 10 });
        cases.push(fc.oneof(spliced, blank).filter((s) => !pattern.test(s)).map(named('does not match the pattern')));
      }
      return fc.oneof(...cases);
    }
    case 'integer': {
      const cases = [
        wrongTypes('number').map(named('wrong type')),
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)).map(named('not an integer')),
      ];
      if (schema.minimum !== undefined) cases.push(fc.integer({ min: -1000, max: schema.minimum - 1 }).map(named('below minimum')));
      // 2^53 and beyond: exactly representable in JSON text and in a double.
      if (schema.maximum !== undefined) cases.push(fc.constantFrom(schema.maximum + 1, 2 ** 60, 1e20).map(named('above maximum')));
      return fc.oneof(...cases);
    }
    case 'object': {
      const keys = Object.keys(schema.properties);
      const base = valid(schema) as fc.Arbitrary<Record<string, unknown>>;
      const withValue = (k: string) =>
        fc.tuple(base, invalid(schema.properties[k])).map(([obj, bad]) => ({ value: { ...obj, [k]: bad.value }, why: `${k}: ${bad.why}` }));
      return fc.oneof<fc.Arbitrary<Broken>[]>(
        ...keys.map(withValue),
        ...(schema.required ?? []).map((k: string) =>
          base.map((obj) => {
            const { [k]: _dropped, ...rest } = obj;
            return { value: rest, why: `${k} missing` };
          }),
        ),
        fc
          .tuple(base, fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !keys.includes(k)), fc.jsonValue())
          .map(([obj, k, v]) => ({ value: { ...obj, [k]: v }, why: 'unknown property' })),
        fc.constantFrom<unknown>([], [{}], 'pet', 42, null, true).map(named('not an object')),
      );
    }
    default:
      throw new Error(`arbitraries.ts cannot break type ${schema.type}`);
  }
}

// The request parts of the document's operations.
export const newPet = componentSchema('NewPet');
export const limitParam = parameterSchema('Limit');
export const statusParam = parameterSchema('StatusFilter');
export const petIdParam = parameterSchema('PetId');
export const idempotencyKeyParam = parameterSchema('IdempotencyKey');

export const validNewPet = valid(newPet) as fc.Arbitrary<{ name: string; categoryId: number; status?: string }>;
export const invalidNewPet = invalid(newPet);

export const validListQuery = fc.record(
  { limit: valid(limitParam) as fc.Arbitrary<number>, status: valid(statusParam) as fc.Arbitrary<string> },
  { requiredKeys: [] },
);

/** Parameter values travel as text: keep only the broken values whose text is broken too ("7" is a fine limit). */
function brokenText(schema: Schema) {
  return invalid(schema)
    .map(({ value, why }) => ({ text: asText(value), why }))
    .filter((v): v is { text: string; why: string } => v.text !== undefined && !textFits(flatten(schema), v.text));
}

function textFits(schema: Schema, text: string): boolean {
  if (schema.enum) return schema.enum.includes(text);
  if (schema.type === 'integer') {
    return /^-?\d+$/.test(text) && Number(text) >= (schema.minimum ?? -Infinity) && Number(text) <= (schema.maximum ?? Infinity);
  }
  throw new Error(`no text form for type ${schema.type}`);
}

/** How a value is written in a URL; objects have no such form. */
function asText(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object') return undefined;
  return String(value);
}

/** A query that breaks the document in one parameter. */
export const invalidListQuery: fc.Arbitrary<{ query: Record<string, string>; why: string }> = fc.oneof(
  brokenText(limitParam).map(({ text, why }) => ({ query: { limit: text }, why: `limit: ${why}` })),
  brokenText(statusParam).map(({ text, why }) => ({ query: { status: text }, why: `status: ${why}` })),
  fc.constantFrom('', 'x'.repeat(201)).map((cursor) => ({ query: { cursor }, why: 'cursor length' })),
  // base64url as the document's pattern, but not made by the service.
  fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/).map((cursor) => ({ query: { cursor }, why: 'cursor not made by the service' })),
  fc.string({ minLength: 1, maxLength: 40 }).filter((cursor) => !/^[A-Za-z0-9_-]+$/.test(cursor)).map((cursor) => ({ query: { cursor }, why: 'cursor not base64url' })),
);

/** A path segment that is not a pet id (an empty segment or a slash would be another route). */
export const invalidPetId = brokenText(petIdParam).filter(({ text }) => text !== '' && !text.includes('/'));
