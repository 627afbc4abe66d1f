import { errors } from '../errors/apiError.js';
import type { HandlersFor } from '../openapi/operationTypes.js';
import type { EventPosition, EventsRepository } from './repository.js';

/** listEvents' cursor: the (transaction id, event id) of the last event of the page, versioned like the others. */
export const encodeEventCursor = (p: EventPosition) => Buffer.from(`e1:${p.xid}:${p.id}`).toString('base64url');

function decodeEventCursor(cursor: string): EventPosition {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  const match = /^e1:(0|[1-9][0-9]{0,19}):([1-9][0-9]{0,15})$/.exec(text);
  if (!match || BigInt(match[1]!) >= 2n ** 64n) throw errors.invalid_cursor('querystring/cursor is not a cursor produced by this service.');
  return { xid: match[1]!, id: Number(match[2]) };
}

const eventNotFound = (id: string) => errors.event_not_found(`Event ${id} not found.`);
/** The number in `evt_<n>` (the path parameter's pattern guarantees the form). */
const eventNumber = (id: string) => Number(id.slice(4));

/** The event operations, each on the calling key's account's events only. */
export function eventHandlers({ events, listUrl }: { events: EventsRepository; listUrl: (query: string) => string }) {
  return {
    async listEvents(request, reply) {
      const { limit, type, cursor } = request.query as { limit: number; type?: (typeof request.query)['type']; cursor?: string };
      const page = await events.list(request.apiKey!.accountId, { limit, type, after: cursor === undefined ? undefined : decodeEventCursor(cursor) });
      const last = page.rows.at(-1);
      if (page.hasMore && last) {
        const next = `limit=${limit}${type ? `&type=${type}` : ''}&cursor=${encodeEventCursor({ xid: last.xid, id: eventNumber(last.id) })}`;
        reply.header('link', `<${listUrl(next)}>; rel="next"`);
      }
      return page.rows.map(({ xid: _xid, ...event }) => event);
    },

    async getEvent(request) {
      const event = await events.get(request.apiKey!.accountId, eventNumber(request.params.eventId));
      if (!event) throw eventNotFound(request.params.eventId);
      return event;
    },

    async redeliverEvent(request, reply) {
      const { accountId } = request.apiKey!;
      const event = await events.get(accountId, eventNumber(request.params.eventId));
      if (!event) throw eventNotFound(request.params.eventId);
      await events.redeliver(accountId, event);
      reply.code(202);
    },
  } satisfies HandlersFor<'listEvents' | 'getEvent' | 'redeliverEvent'>;
}
