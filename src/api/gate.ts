import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * The API's one onRequest hook: what every request inside the scope goes through before
 * anything is read of its body. Never cached; who is calling (auth/plugin.ts); counted
 * against the caller's quota (ratelimit/plugin.ts). One hook rather than one per concern:
 * a cached key and an in-process count answer at once, so the usual request makes no promise.
 */
export function apiGate(app: FastifyInstance) {
  return function gate(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    reply.header('cache-control', 'no-store');
    const identifying = app.identifyCaller(request);
    if (identifying === undefined) return app.countRequest(request, reply, done);
    identifying.then(() => app.countRequest(request, reply, done), done);
  };
}
