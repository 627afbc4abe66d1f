/** A string in a parsed JSON body that no field may hold, and where it is. */
export interface BadString {
  /** JSON Pointer to the value (as ajv's instancePath), or to the object whose property name it is. */
  at: string;
  /** `surrogate`: an unpaired UTF-16 surrogate, which UTF-8 cannot hold. `nul`: U+0000, which Postgres text refuses. */
  problem: 'surrogate' | 'nul';
  /** True when the bad string is a property name, not a value. */
  key: boolean;
}

const pointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The first string (value or property name) of a JSON value that cannot be stored: checked here
 * once for every field of every operation, rather than by a pattern on each string in the
 * document, so a field added later is covered too.
 */
export function firstBadString(value: unknown, at = ''): BadString | undefined {
  if (typeof value === 'string') return problemOf(value, at, false);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = firstBadString(value[i], `${at}/${i}`);
      if (bad) return bad;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const bad = problemOf(k, at, true) ?? firstBadString(v, `${at}/${pointer(k)}`);
      if (bad) return bad;
    }
  }
  return undefined;
}

function problemOf(s: string, at: string, key: boolean): BadString | undefined {
  if (!s.isWellFormed()) return { at, problem: 'surrogate', key };
  if (s.includes('\u0000')) return { at, problem: 'nul', key };
  return undefined;
}
