import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { NOSNIFF } from '../errors/render.js';
import { unmetExpectation } from './protocolAnswers.js';

const missingHost = () => errors.bad_request('The request has no Host header, which HTTP/1.1 requires.');
const twoHosts = () => errors.bad_request('The request has more than one Host header.');

/** Why a request is refused on arrival, if it is. */
function refusalOf(raw: IncomingMessage): Error | undefined {
  // Node's own check answers 400 with no body (requireHostHeader is off in app.ts).
  if (raw.headers.host === undefined && raw.httpVersionMinor === 1) return missingHost();
  if (hostCount(raw.rawHeaders) > 1) return twoHosts();
  if (unmetExpectation(raw)) return errors.expectation_failed(`Expect: ${String(raw.headers.expect).slice(0, 100)} cannot be met; only 100-continue is supported.`);
  return undefined;
}

/** Node keeps only the first of several Host headers in `headers`; the raw list has them all (RFC 9112 §3.2: 400). */
function hostCount(rawHeaders: string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') n++;
  return n;
}

/** Counts a refusal against its caller, then answers it (or the rate limit's refusal instead). */
export type RefusalCounter = (request: FastifyRequest, reply: FastifyReply, refusal: Error, done: HookHandlerDoneFunction) => void;

/**
 * First thing for every request, in one hook: an HTTP/1.1 request without a Host header, any
 * with two, and one with an `Expect` Node cannot meet (protocolAnswers.ts) are refused; the
 * headers every response carries (its request id, no MIME sniffing; errors set them again, see
 * errors/render.ts, as router errors skip the hooks). Under the API's base path (`api`, which
 * app.ts passes in with the API gate's `countRefusal`) a refusal is counted against the caller
 * first, so it carries the rate-limit fields as any API answer does.
 */
export default fp(
  async function arrivalPlugin(app: FastifyInstance, opts: { api?: { basePath: string; countRefusal: RefusalCounter } }) {
    const { api } = opts;
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id).header('x-content-type-options', NOSNIFF);
      const refusal = refusalOf(request.raw);
      if (!refusal) return done();
      if (!api || !request.url.startsWith(`${api.basePath}/`)) return done(refusal);
      api.countRefusal(request, reply, refusal, done);
    });
  },
  { name: 'arrival' },
);
