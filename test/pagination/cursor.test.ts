import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../src/pagination/cursor.js';

describe('cursor', () => {
  it.each([0, 1, 42, 9007199254740991])('round-trips %d', (id) => {
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });

  it.each(['', 'x y', '!!', Buffer.from('v1:abc').toString('base64url'), Buffer.from('v1:01').toString('base64url'), Buffer.from('v1:99999999999999999').toString('base64url')])(
    'rejects %j',
    (cursor) => {
      expect(decodeCursor(cursor)).toBeUndefined();
    },
  );
});
