// npm run cluster:demo: three instances behind HAProxy, a Redis Cluster, Postgres through
// PgBouncer (scripts/lib/scaleOut.ts), until Ctrl-C. The Postgres server is DATABASE_URL's
// (an admin URL; the local one by default): the demo creates a database of its own there and drops it at the end.
import { LOCAL_POSTGRES_URL } from './lib/probes.js';
import { startScaleOut, type ScaleOut } from './lib/scaleOut.js';

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

async function main(): Promise<void> {
  // From the start, so a Ctrl-C while starting cleans up too. Every signal is caught: npm and tsx
  // pass Ctrl-C on as a second one, which would otherwise end the process halfway through cleaning up.
  const stopSignal = new Promise<string>((resolve) => {
    process.on('SIGINT', () => resolve('SIGINT'));
    process.on('SIGTERM', () => resolve('SIGTERM'));
  });
  console.log(`Starting: Postgres database ${database} on ${new URL(adminUrl).host}, PgBouncer, a 3-master Redis Cluster, 3 instances, HAProxy…`);
  const topo = await startScaleOut({ adminUrl, database });
  const key = await topo.createKey({ plan: 'free', name: 'cluster demo' }).catch(async (err: Error) => {
    await topo.stop();
    throw err;
  });
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
  const stopWatching = watchStates(topo); // also keeps the process alive
  const signal = await stopSignal;
  console.log(`\n${signal}: stopping HAProxy, the instances, PgBouncer and the Redis Cluster; dropping ${database}…`);
  stopWatching();
  await topo.stop();
  console.log('Stopped.');
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
