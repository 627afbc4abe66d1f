import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** Called once each response is sent, with its route's config (read once for all observers). */
export type ResponseObserver = (request: FastifyRequest, reply: FastifyReply, config: FastifyContextConfig) => void;

declare module 'fastify' {
  interface FastifyInstance {
    /** Adds an observer of every response (the request line, the metrics); call before the app is ready. */
    observeResponses(observer: ResponseObserver): void;
  }
}

/**
 * One onResponse hook for everything that records answered requests. Fastify builds
 * `request.routeOptions` anew on each read (an object of a dozen fields): read once here.
 */
export default fp(
  async function responseObserversPlugin(app: FastifyInstance) {
    const observers: ResponseObserver[] = [];
    app.decorate('observeResponses', (observer: ResponseObserver) => {
      observers.push(observer);
    });
    app.addHook('onResponse', (request, reply, done) => {
      if (observers.length > 0) {
        const { config } = request.routeOptions;
        for (const observe of observers) observe(request, reply, config);
      }
      done();
    });
  },
  { name: 'response-observers' },
);
