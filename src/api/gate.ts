import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { components } from '../../generated/openapi.js';
import { authorize } from '../auth/plugin.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a key needs for the route's operation: its x-required-scope (set by api/routes.ts; none: not secured). */
    scope?: components['schemas']['Scope'];
  }
}

/**
 * The API's one onRequest hook: what every request inside the scope goes through before
 * anything is read of its body. Never cached; who is calling (auth/plugin.ts); counted
 * against the caller's quota (ratelimit/plugin.ts); then, for a secured operation, whether
 * the key may use it (its scope). One hook rather than one per concern: a cached key and an
 * in-process count answer at once, so the usual request makes no promise.
 */
export function apiGate(app: FastifyInstance): (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void {
  return function gate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    reply.header('cache-control', 'no-store');
    // Unknown paths and methods, and router errors, have no scope: nothing to authorize.
    const scope = request.routeOptions.config.scope;
    const counted = scope === undefined ? done : (refused?: Error) => done(refused ?? authorize(request, scope));
    const identifying = app.identifyCaller(request);
    if (identifying === undefined) return app.countRequest(request, reply, counted);
    identifying.then(() => app.countRequest(request, reply, counted), done);
  };
}

/**
 * Fastify's `frameworkErrors`: router errors (a bad percent-encoding, an over-long parameter)
 * come before any route, so no hook runs for them. Under the API's base path they go through
 * the gate here, so they are counted like any API request; then the one error path answers.
 */
export function routerErrors(basePath: string, handleError: (err: Error, request: FastifyRequest, reply: FastifyReply) => unknown) {
  return (err: Error, request: FastifyRequest, reply: FastifyReply) => {
    if (!request.url.startsWith(`${basePath}/`)) return handleError(err, request, reply);
    apiGate(request.server)(request, reply, (refused) => handleError(refused ?? err, request, reply));
  };
}

/**
 * A request refused on arrival (http/arrival.ts: no Host, two, an Expect it cannot meet) under
 * the API's base path: identified and counted once, as the gate would have (it does not run
 * after a refusal), and never authorized, since the refusal is about HTTP, not the caller's
 * rights; so the answer carries the caller's rate-limit fields. Then the refusal, unless the
 * quota refuses first, as for router errors.
 */
export function countRefusal(request: FastifyRequest, reply: FastifyReply, refusal: Error, done: HookHandlerDoneFunction): void {
  const app = request.server;
  reply.header('cache-control', 'no-store');
  const counted = (limited?: Error) => done(limited ?? refusal);
  const identifying = app.identifyCaller(request);
  if (identifying === undefined) return app.countRequest(request, reply, counted);
  identifying.then(() => app.countRequest(request, reply, counted), done);
}
