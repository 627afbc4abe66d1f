import type { Socket } from 'node:net';

/** One open connection, as the caps see it. */
export interface Connection {
  socket: Socket;
  /** Its peer's address group (addressGroup.ts). */
  group: string;
  openedAt: number;
  /** Bytes moved either way when last looked at, and when that count last changed. */
  io: number;
  activeAt: number;
}

/**
 * Whether a request is in progress on the connection: a response is assigned and not yet
 * written (Node's own closeIdleConnections() asks the same of `_httpMessage`). A connection
 * between requests, or that has not sent one yet, is idle.
 */
function busy(socket: Socket): boolean {
  const response = (socket as Socket & { _httpMessage?: { writableEnded: boolean } | null })._httpMessage;
  return response != null && !response.writableEnded;
}

/**
 * Closes up to `count` idle connections among `candidates`, longest idle first; returns how
 * many it closed. "Idle since" is when the connection was last seen moving bytes: by these
 * looks, which come only when a cap is reached, so a normal request pays nothing for it.
 * A connection that moved since the last look counts as active now; ties go oldest first.
 */
export function closeIdle(candidates: Iterable<Connection>, count: number, now: number): number {
  const idle: Connection[] = [];
  for (const c of candidates) {
    const io = c.socket.bytesRead + c.socket.bytesWritten;
    if (io !== c.io) {
      c.io = io;
      c.activeAt = now;
    }
    // Not one already closing (an answer lingering, see lingeringClose.ts): it frees its place soon.
    if (c.socket.writable && !busy(c.socket)) idle.push(c);
  }
  idle.sort((a, b) => a.activeAt - b.activeAt || a.openedAt - b.openedAt);
  const closing = idle.slice(0, count);
  for (const c of closing) c.socket.destroy();
  return closing.length;
}
