// npm run cluster:demo: three instances behind HAProxy, a Redis Cluster, Postgres through
// PgBouncer (test/helpers/scaleOut.ts), until Ctrl-C.
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from './lib/cli.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { startScaleOut, type ScaleOut } from '../test/helpers/scaleOut.js';

const USAGE = `Usage: npm run cluster:demo

Starts the production topology on this machine, for you to try: HAProxy in front of three
instances of the service, a 3-master Redis Cluster, and Postgres through PgBouncer; prints
their URLs and an API key, then HAProxy's view of the instances as it changes, until Ctrl-C.
The Postgres server is DATABASE_URL's (an admin URL; default ${LOCAL_POSTGRES_URL}): the
demo makes a database of its own there. Needs redis-server 7+, redis-cli, pgbouncer and
haproxy (Debian packages). Ctrl-C, a failure or SIGTERM stops everything it started and drops
its database.`;

parseCommandLine(USAGE);
const adminUrl = process.env.DATABASE_URL || LOCAL_POSTGRES_URL;
const database = `as_demo_${process.pid}`;

/** Prints each change of HAProxy's view of the instances (kill one and watch it go DOWN, then UP). */
function watchStates(topo: ScaleOut): () => void {
  let last = '';
  const timer = setInterval(() => {
    topo.haproxy.states().then((states) => {
      const now = Object.entries(states).map(([name, state]) => `${name} ${state}`).join(', ');
      if (now !== last) console.log(`${new Date().toISOString()}  HAProxy: ${now}`);
      last = now;
    }, () => {});
  }, 500);
  return () => clearInterval(timer);
}

// Everything started is noted as it starts (lib/cleanup.ts): a Ctrl-C while starting, a failure,
// or a Ctrl-C later stops all of it and drops the database.
await runCommand(async () => {
  console.log(`Starting: Postgres database ${database} on ${new URL(adminUrl).host}, PgBouncer, a 3-master Redis Cluster, 3 instances, HAProxy…`);
  const topo = await startScaleOut({ adminUrl, database });
  const key = await topo.createKey({ plan: 'free', name: 'cluster demo' });
  console.log(`
  API (through HAProxy)  ${topo.url}      docs: ${topo.url}/docs
  HAProxy stats          ${topo.statsUrl}
  instances              ${topo.instances.map((i) => `${i.name} ${i.baseUrl}`).join(', ')}
  Redis Cluster          ${topo.redis.url}
  PgBouncer              ${topo.pgbouncer.url}

  API key (free plan, 60 a minute shared by all three):
    ${key}

  Try:  curl -i -H "Authorization: Bearer ${key}" ${topo.url}/v1/pets
  Kill an instance (kill -9 <pid>: ${topo.instances.map((i) => `${i.name} ${i.pid()}`).join(', ')}) and watch HAProxy route around it.

Ctrl-C stops everything.
`);
  watchStates(topo); // keeps the process alive until a signal ends it
  await new Promise<never>(() => {});
});
