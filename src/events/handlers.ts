import { errors } from '../errors/apiError.js';
import type { HandlersFor } from '../openapi/operationTypes.js';
import { REDELIVERIES_PER_HOUR } from '../limits.js';
import { decodeCommitCursor, encodeCommitCursor, startAfter } from '../pagination/cursor.js';
import { RedeliveryRefused, type EventsRepository } from './repository.js';

const eventNotFound = (id: string) => errors.event_not_found(`Event ${id} not found.`);
/** The number in `evt_<n>` (the path parameter's pattern guarantees the form). */
const eventNumber = (id: string) => Number(id.slice(4));

/**
 * Longer than any delivery series can last: every retry delay at its +20% jitter, each attempt's
 * timeout, and the breaker's longest pause before each attempt. A redelivery series still open
 * after it lost its jobs, and stops blocking the next.
 */
export const seriesBoundSeconds = (w: { retryDelaysSeconds: number[]; timeoutMs: number }) =>
  Math.ceil((w.retryDelaysSeconds.reduce((sum, s) => sum + s * 1.2, 0) + (w.retryDelaysSeconds.length + 1) * (w.timeoutMs / 1000 + 3600)) * 1.1);

/** The event operations, each on the calling key's account's events only. */
export function eventHandlers({ events, listUrl, seriesBoundSeconds }: { events: EventsRepository; listUrl: (query: string) => string; seriesBoundSeconds: number }) {
  return {
    async listEvents(request, reply) {
      const { limit, type, cursor } = request.query as { limit: number; type?: (typeof request.query)['type']; cursor?: string };
      const page = await events.list(request.apiKey!.accountId, { limit, type, after: startAfter(cursor, decodeCommitCursor) });
      const last = page.rows.at(-1);
      if (page.hasMore && last) {
        const next = `limit=${limit}${type ? `&type=${type}` : ''}&cursor=${encodeCommitCursor({ xid: last.xid, id: eventNumber(last.id) })}`;
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
      try {
        await events.redeliver(accountId, event, seriesBoundSeconds);
      } catch (err) {
        if (!(err instanceof RedeliveryRefused)) throw err;
        const { endpoints, used, retryAfterSeconds } = err.detail;
        throw err.reason === 'redelivery_in_progress'
          ? errors.redelivery_in_progress(
              `A redelivery of ${event.id} to each endpoint subscribed to it (${endpoints!.join(', ')}) is still in progress; another can start once it ends (listWebhookDeliveries shows its attempts).`,
            )
          : errors.redelivery_budget_exhausted(
              `The account has started ${used} redeliveries in the last hour, and may start at most ${REDELIVERIES_PER_HOUR} in any hour; retry after ${retryAfterSeconds} s.`,
              { 'retry-after': String(retryAfterSeconds) },
            );
      }
      reply.code(202);
    },
  } satisfies HandlersFor<'listEvents' | 'getEvent' | 'redeliverEvent'>;
}
