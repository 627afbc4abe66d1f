/** The query of a keyset-paginated list (listPets, listOrders). */
export interface PageQuery {
  limit: number;
  status?: string;
  cursor: string;
}

/** The next page's query, read from the `Link: <...>; rel="next"` URL as a typed client's user does. */
export function nextPageQuery(link: string | null): PageQuery | undefined {
  if (!link) return undefined;
  const params = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!).searchParams;
  const status = params.get('status');
  return { limit: Number(params.get('limit')), ...(status && { status }), cursor: params.get('cursor')! };
}
