import { errors } from '../errors/apiError.js';

/*
 * Opaque pagination cursors, the one codec of every list: the position of the previous page's
 * last row, as a format tag and decimal parts, in base64url. Keyset pages (keysetPage.ts) hand out
 * `v1:<id>`, commit-ordered ones (commitOrder.ts: listEvents) `e1:<xid>:<id>`. A new format takes
 * a new tag, so links already handed out keep working.
 */

/** An xid8 is unsigned 64-bit; ids are bigint rows read as exact JS numbers. */
const MAX_XID = 2n ** 64n - 1n;
const MAX_ID = BigInt(Number.MAX_SAFE_INTEGER);

const encode = (tag: string, parts: Array<string | number>) => Buffer.from([tag, ...parts].join(':')).toString('base64url');

/** The parts of a cursor of `tag`, each a decimal within its bound; undefined if the cursor is not one this service hands out. */
function decode(cursor: string, tag: string, bounds: bigint[]): string[] | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const [head, ...parts] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if (head !== tag || parts.length !== bounds.length) return undefined;
  return parts.every((part, i) => /^(0|[1-9][0-9]{0,19})$/.test(part) && BigInt(part) <= bounds[i]!) ? parts : undefined;
}

/** A keyset page's cursor: the last id of the previous page. */
export const encodeCursor = (lastId: number) => encode('v1', [lastId]);

/** The id after which the page starts, or undefined if the cursor is not one of ours. */
export function decodeCursor(cursor: string): number | undefined {
  const parts = decode(cursor, 'v1', [MAX_ID]);
  return parts && Number(parts[0]);
}

/** Where a commit-ordered page starts: after this transaction id (an xid8, as text) and row id. */
export interface CommitPosition {
  xid: string;
  id: number;
}

export const encodeCommitCursor = (p: CommitPosition) => encode('e1', [p.xid, p.id]);

/** The position after which the page starts, or undefined if the cursor is not one of ours. */
export function decodeCommitCursor(cursor: string): CommitPosition | undefined {
  const parts = decode(cursor, 'e1', [MAX_XID, MAX_ID]);
  return parts && { xid: parts[0]!, id: Number(parts[1]) };
}

/** A list's `cursor` parameter decoded (`decodeAs`): undefined for a first page; one this service did not hand out is a 400 `invalid_cursor`. */
export function startAfter<T>(cursor: string | undefined, decodeAs: (cursor: string) => T | undefined): T | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeAs(cursor);
  if (position === undefined) throw errors.invalid_cursor('querystring/cursor is not a cursor produced by this service.');
  return position;
}
