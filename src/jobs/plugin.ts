import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { PgBoss } from 'pg-boss';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { embeddedConnection } from '../db/embeddedPostgres.js';
import { startQueue } from './queue.js';
import { startSchedules, type Schedule } from './schedules.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Background work (docs/ARCHITECTURE.md): the job queue, whose queues and workers belong to what
     * owns their jobs (webhooks/plugin.ts), and the scheduler, to which each sweep is given (app.ts).
     */
    jobs: {
      boss: PgBoss;
      /** Registers a sweep and this instance's worker for it (schedules.ts): `run` gets the time of `clock`. */
      schedule(queue: string, cron: string, run: Schedule['run']): Promise<void>;
      /** Stops, finishing what they hold, before pg-boss stops (the plugin's onClose). */
      beforeStop(stop: (timeoutMs: number) => Promise<void>): void;
      /** What a queue's workers do with a database error: what pg-boss's own get (below). */
      onError(err: Error): void;
    };
  }
}

/**
 * Starts the job queue in the service's database, and stops it when the app closes, after the
 * workers registered with `beforeStop` (each given `stopTimeoutMs` to finish what it holds).
 */
export default fp(
  async function jobsPlugin(app: FastifyInstance, opts: { config: Config; clock: Clock; stopTimeoutMs: number }) {
    const { databaseUrl, dataDir } = opts.config;
    // Debug only: pg-boss and the workers retry on their own, and an outage is already reported once per
    // interval by the request path and readiness (errors/, health/); the workers would add a line per poll.
    const onError = (err: Error) => app.log.debug({ err: err.message, code: (err as { code?: string }).code }, 'job queue database error');
    const boss = await startQueue(databaseUrl ? { connectionString: databaseUrl } : embeddedConnection(dataDir), { onError });
    const stops: Array<(timeoutMs: number) => Promise<void>> = [];
    app.decorate('jobs', {
      boss,
      schedule: (queue, cron, run) => startSchedules(boss, [{ queue, cron, run }], opts.clock),
      beforeStop: (stop) => void stops.push(stop),
      onError,
    });
    app.addHook('onClose', async () => {
      await Promise.all(stops.map((stop) => stop(opts.stopTimeoutMs)));
      await boss.stop({ graceful: true, close: false, timeout: opts.stopTimeoutMs });
    });
  },
  { name: 'jobs', dependencies: ['database'] },
);
