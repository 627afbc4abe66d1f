import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors/apiError.js';
import { decodeCommitCursor, decodeCursor, encodeCommitCursor, encodeCursor, startAfter } from '../../src/pagination/cursor.js';

const b64 = (text: string) => Buffer.from(text).toString('base64url');

describe('cursor (keyset pages: the last id)', () => {
  it.each([0, 1, 42, 9007199254740991])('round-trips %d', (id) => {
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });

  it('reads the v1 cursors already handed out', () => {
    expect(encodeCursor(42)).toBe(b64('v1:42'));
    expect(decodeCursor(b64('v1:42'))).toBe(42);
  });

  it.each(['', 'x y', '!!', b64('v1:abc'), b64('v1:01'), b64('v1:99999999999999999'), b64('v1:9007199254740992'), b64('v1:1:2'), b64('e1:1:2'), b64('v2:10')])('rejects %j', (cursor) => {
    expect(decodeCursor(cursor)).toBeUndefined();
  });
});

describe('commit cursor (commit-ordered pages: transaction id and id)', () => {
  it.each([
    { xid: '0', id: 0 },
    { xid: '7', id: 1 },
    { xid: '18446744073709551615', id: 9007199254740991 },
  ])('round-trips %j', (position) => {
    expect(decodeCommitCursor(encodeCommitCursor(position))).toEqual(position);
  });

  it('reads the e1 cursors already handed out', () => {
    expect(encodeCommitCursor({ xid: '1234', id: 56 })).toBe(b64('e1:1234:56'));
    expect(decodeCommitCursor(b64('e1:1234:56'))).toEqual({ xid: '1234', id: 56 });
  });

  it.each(['', '!!', b64('e1:18446744073709551616:1'), b64('e1:01:1'), b64('e1:1'), b64('e1:1:2:3'), b64('e1:-1:2'), b64('e1:1:9007199254740992'), b64('v1:5')])('rejects %j', (cursor) => {
    expect(decodeCommitCursor(cursor)).toBeUndefined();
  });
});

describe('startAfter (a list\'s cursor parameter)', () => {
  it('gives nothing for a first page, and the position for a cursor of ours', () => {
    expect(startAfter(undefined, decodeCursor)).toBeUndefined();
    expect(startAfter(encodeCursor(9), decodeCursor)).toBe(9);
    expect(startAfter(encodeCommitCursor({ xid: '3', id: 4 }), decodeCommitCursor)).toEqual({ xid: '3', id: 4 });
  });

  it('answers any other with 400 invalid_cursor, including another list\'s', () => {
    for (const [cursor, decodeAs] of [
      ['nonsense', decodeCursor],
      [encodeCommitCursor({ xid: '3', id: 4 }), decodeCursor],
      [encodeCursor(9), decodeCommitCursor],
    ] as const) {
      const thrown = (() => {
        try {
          startAfter(cursor, decodeAs as (c: string) => unknown);
        } catch (err) {
          return err;
        }
      })();
      expect(thrown).toBeInstanceOf(ApiError);
      expect([(thrown as ApiError).statusCode, (thrown as ApiError).code, (thrown as ApiError).message]).toEqual([400, 'invalid_cursor', 'querystring/cursor is not a cursor produced by this service.']);
    }
  });
});
