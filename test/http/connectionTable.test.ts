import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { closeIdle, type Connection } from '../../src/http/connectionTable.js';

/** What closeIdle reads of a socket: its byte counts, whether it can still be written, and the response in progress. */
function connection(name: string, openedAt: number, opts: { busy?: boolean; closing?: boolean; io?: number } = {}) {
  const socket = {
    name,
    bytesRead: opts.io ?? 0,
    bytesWritten: 0,
    writable: !opts.closing,
    destroyed: false,
    _httpMessage: opts.busy ? { writableEnded: false } : null,
    destroy() {
      this.destroyed = true;
      this.writable = false;
    },
  };
  const c: Connection = { socket: socket as unknown as Socket, group: 'a', openedAt, io: 0, activeAt: openedAt };
  return c;
}
const names = (cs: Connection[]) => cs.filter((c) => c.socket.destroyed).map((c) => (c.socket as unknown as { name: string }).name);

describe('closing idle connections to make room', () => {
  it('closes the longest idle first, and only as many as asked', () => {
    const cs = [connection('a', 1), connection('b', 2), connection('c', 3)];
    expect(closeIdle(cs, 2, 10)).toBe(2);
    expect(names(cs)).toEqual(['a', 'b']);
  });

  it('never closes a connection with a request in progress, nor one already closing', () => {
    const cs = [connection('busy', 1, { busy: true }), connection('closing', 2, { closing: true }), connection('idle', 3)];
    expect(closeIdle(cs, 3, 10)).toBe(1);
    expect(names(cs)).toEqual(['idle']);
  });

  it('counts a connection that moved bytes since the last look as active then, so one used again is kept', () => {
    const cs = [connection('old-but-used', 1), connection('newer', 2), connection('newest', 3)];
    closeIdle(cs, 0, 10); // a first look: none has moved since it opened
    (cs[0]!.socket as unknown as { bytesRead: number }).bytesRead = 100; // used again since
    expect(closeIdle(cs, 2, 20)).toBe(2);
    expect(names(cs)).toEqual(['newer', 'newest']);
  });

  it('closes nothing when everything is busy', () => {
    const cs = [connection('a', 1, { busy: true }), connection('b', 2, { busy: true })];
    expect(closeIdle(cs, 1, 10)).toBe(0);
  });
});
