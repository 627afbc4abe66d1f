/** Just enough of the Postgres wire protocol (v3) to send a statement's messages by hand. */

/** One frontend message: its type byte, its length, then `parts`. */
export function message(type: string, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

export const cstring = (s: string) => Buffer.from(`${s}\0`, 'utf8');
export const int16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);

export function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}
