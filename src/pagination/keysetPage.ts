import type { FastifyReply } from 'fastify';
import { decodeCursor, encodeCursor, startAfter } from './cursor.js';

/** The query of a keyset-paginated list (listPets, listOrders): `limit` is always there, validation applies its default. */
export interface PageQuery {
  limit: number;
  status?: string;
  categoryId?: number;
  cursor?: string;
}

/** The id a page starts after; a cursor this service did not hand out is a 400 `invalid_cursor`. */
export const pageStart = (query: PageQuery): number | undefined => startAfter(query.cursor, decodeCursor);

/** Sets `Link: rel="next"` when more rows follow the page, keeping the page's `limit` and filters. */
export function linkNextPage(reply: FastifyReply, listUrl: (query: string) => string, query: PageQuery, page: { rows: ReadonlyArray<{ id: number }>; hasMore: boolean }): void {
  const last = page.rows.at(-1);
  if (!page.hasMore || !last) return;
  // Every value is URL-safe as it is: digits, an enum value, a base64url cursor.
  const filters = `${query.status ? `&status=${query.status}` : ''}${query.categoryId !== undefined ? `&categoryId=${query.categoryId}` : ''}`;
  const next = `limit=${query.limit}${filters}&cursor=${encodeCursor(last.id)}`;
  reply.header('link', `<${listUrl(next)}>; rel="next"`);
}

/** A page from rows read with one look-ahead row (`limit + 1`): that row, if any, is dropped in place and tells that more follow. */
export function pageOf<T>(rows: T[], limit: number): { rows: T[]; hasMore: boolean } {
  const hasMore = rows.length > limit;
  if (hasMore) rows.length = limit;
  return { rows, hasMore };
}
