/**
 * Opaque pagination cursors. A cursor encodes the last id of the previous page,
 * versioned so the format can change without breaking links already handed out.
 */
const PREFIX = 'v1:';

export function encodeCursor(lastId: number): string {
  return Buffer.from(`${PREFIX}${lastId}`).toString('base64url');
}

/** Returns the id after which the page starts, or undefined if the cursor is not one of ours. */
export function decodeCursor(cursor: string): number | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^v1:(0|[1-9][0-9]{0,15})$/.exec(text);
  if (!match) return undefined;
  const id = Number(match[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}
