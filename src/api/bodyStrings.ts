/** A string in a parsed JSON body that no field may hold, and where it is. */
export interface BadString {
  /** JSON Pointer to the value (as ajv's instancePath), or to the object whose property name it is. */
  at: string;
  /**
   * `surrogate`: an unpaired UTF-16 surrogate, which UTF-8 cannot hold. `control`: a character
   * no field accepts (`REFUSED`), named in `char`.
   */
  problem: 'surrogate' | 'control';
  /** The refused character as the message names it, e.g. "U+202E (a bidirectional control)". */
  char?: string;
  /** True when the bad string is a property name, not a value. */
  key: boolean;
}

/**
 * Characters no string of a body may hold: C0 controls (tab and newline too), DEL, C1 controls
 * and Unicode's bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
 * Postgres text cannot hold U+0000; the rest would let a stored name or description break or
 * reorder the lines of the pages and logs that show it (a spoofed "Rex" that reads otherwise).
 */
const REFUSED = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/;

/** "U+0000 (NUL)", "U+001B (a control character)", "U+202E (a bidirectional control)". */
function named(c: string): string {
  const cp = c.codePointAt(0)!;
  const hex = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  if (cp === 0) return `${hex} (NUL)`;
  return cp <= 0x9f ? `${hex} (a control character)` : `${hex} (a bidirectional control)`;
}

const pointer = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * The first string (value or property name) of a JSON value that no field accepts: checked here
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
  const refused = REFUSED.exec(s);
  if (refused) return { at, problem: 'control', key, char: named(refused[0]) };
  return undefined;
}
