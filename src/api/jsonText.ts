/** What the body parser checks in raw JSON text before (and beyond) JSON.parse. */
export interface JsonTextShape {
  /** The deepest nesting of arrays and objects. */
  depth: number;
  /** The first number literal that is not an integer but parses to one (`9007199254740990.6`): it would be rounded silently. */
  roundedNumber?: string;
}

const NUMBER = /-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?/y;

/** One pass over the text, skipping strings: nesting depth and number literals that lose their fraction. */
export function jsonTextShape(text: string): JsonTextShape {
  let depth = 0;
  let max = 0;
  let roundedNumber: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92 /* \ */) i++;
    } else if (c === 123 || c === 91 /* { [ */) max = Math.max(max, ++depth);
    else if (c === 125 || c === 93 /* } ] */) depth--;
    else if (c === 45 || (c >= 48 && c <= 57) /* - 0-9 */) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) continue;
      if (roundedNumber === undefined && !isIntegerLiteral(m[1]!, m[2] ?? '', Number(m[3] ?? 0)) && Number.isInteger(Number(m[0]))) {
        roundedNumber = m[0];
      }
      i += m[0].length - 1;
    }
  }
  return { depth: max, ...(roundedNumber !== undefined && { roundedNumber }) };
}

/** Whether `int.frac × 10^exp` is a whole number, by its digits. */
function isIntegerLiteral(int: string, frac: string, exp: number): boolean {
  const digits = int + frac;
  const point = int.length + exp; // digits at or after this index are fractional
  for (let k = Math.max(point, 0); k < digits.length; k++) if (digits[k] !== '0') return false;
  return true;
}
