import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { startScaleOut, type Instance, type ScaleOut } from '../helpers/scaleOut.js';
import { openLoad, type OpenLoad } from '../helpers/openLoad.js';
import { parsePrometheus } from '../helpers/prometheus.js';
import { postgresServerUrl, withoutHAProxy, withoutPgBouncer, withoutRedisCluster } from '../helpers/services.js';
import { databaseName } from '../helpers/testDatabase.js';

/*
 * Issue 13's topology on one machine: three instances (src/server.ts) behind Debian's
 * HAProxy checking /readyz, sharing a 3-master Redis Cluster and one Postgres database
 * through PgBouncer in transaction mode (test/helpers/scaleOut.ts). Each part prints its
 * counts on one "load-balancer:" line for CI's output.
 */

const RATE = 200;
const skip = withoutPgBouncer() || withoutRedisCluster() || withoutHAProxy();

let topo: ScaleOut;
beforeAll(async () => {
  if (skip) return;
  topo = await startScaleOut({ adminUrl: postgresServerUrl(), database: databaseName('lb') });
}, 120_000);
afterAll(async () => {
  await topo?.stop();
});

/** Loads still running: a failed assertion must not leave one sending to a stopped topology. */
const loads = new Set<OpenLoad>();
afterEach(async () => {
  await Promise.all([...loads].map((load) => load.stop()));
  loads.clear();
});
function steadyLoad(key: string): OpenLoad {
  const load = openLoad(`${topo.url}/v1/pets?limit=5`, { rate: RATE, headers: { authorization: `Bearer ${key}` } });
  loads.add(load);
  return load;
}
async function finish(load: OpenLoad) {
  loads.delete(load);
  return load.stop();
}
/** Lets the load run for `n` more requests (a wait on real processes, not on the clock). */
const moreRequests = (load: OpenLoad, n: number) => {
  const target = load.sent() + n;
  return waitFor(() => load.sent() >= target, 30_000, 10);
};

/** Requests of `plan` the instance's rate limiter counted (allowed, limited or banned), from its own metrics listener. */
async function decisions(instance: Instance, plan: string): Promise<number> {
  const samples = parsePrometheus(await (await fetch(instance.metricsUrl()!)).text());
  return samples.filter((s) => s.name === 'animal_store_rate_limit_decisions_total' && s.labels.plan === plan).reduce((sum, s) => sum + s.value, 0);
}

const enterpriseKey = () => topo.createKey({ plan: 'enterprise', perMinute: 1_000_000, perDay: 100_000_000 });
const statusLine = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([outcome, n]) => `${n} × ${outcome}`)
    .join(', ');

describe.skipIf(skip)('three instances behind HAProxy, sharing a Redis Cluster and Postgres through PgBouncer', () => {
  it('admits one free key exactly 60 per minute across the three', async () => {
    const key = await topo.createKey({ plan: 'free' });
    // The instances count in wall-clock minutes: start early in one, so 90 requests fit in it.
    expect(await waitFor(() => new Date().getUTCSeconds() < 50, 15_000)).toBe(true);
    const minute = Math.floor(Date.now() / 60_000);
    const before = await Promise.all(topo.instances.map((i) => decisions(i, 'free')));

    const statuses: number[] = [];
    for (let round = 0; round < 9; round++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => fetch(`${topo.url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })),
      );
      for (const res of answers) {
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    }
    expect(Math.floor(Date.now() / 60_000), 'all 90 requests in one minute').toBe(minute);

    const after = await Promise.all(topo.instances.map((i) => decisions(i, 'free')));
    const served = topo.instances.map((instance, i) => ({ name: instance.name, n: after[i]! - before[i]! }));
    const counts = { 200: statuses.filter((s) => s === 200).length, 429: statuses.filter((s) => s === 429).length };
    console.log(
      `load-balancer: one free key (60/min) through HAProxy: ${statuses.length} requests, ${counts[200]} × 200, ${counts[429]} × 429; ` +
        `counted per instance: ${served.map((s) => `${s.name} ${s.n}`).join(', ')}`,
    );
    expect(counts).toEqual({ 200: 60, 429: 30 });
    expect(served.reduce((sum, s) => sum + s.n, 0)).toBe(90);
    expect(served.filter((s) => s.n > 0).length, 'spread over at least two instances').toBeGreaterThanOrEqual(2);
  }, 60_000);

  it(`restarts all three one after another under ${RATE} req/s with no failed request`, async () => {
    const key = await enterpriseKey();
    const retriesBefore = (await topo.haproxy.stats()).total.retries;
    const load = steadyLoad(key);
    await moreRequests(load, RATE); // a second of steady load first

    const restarts: Array<{ exitCode: number | null; stateAtExit: string | undefined; upAgain: boolean }> = [];
    for (let i = 0; i < topo.instances.length; i++) {
      const { exitCode, stateAtExit } = await topo.restart(i);
      const upAgain = await topo.haproxy.waitForState(topo.instances[i]!.name, 'UP', 20_000);
      restarts.push({ exitCode, stateAtExit, upAgain });
      if (!upAgain) break;
    }
    await moreRequests(load, RATE);
    const result = await finish(load);
    const retries = (await topo.haproxy.stats()).total.retries - retriesBefore;

    console.log(
      `load-balancer: rolling restart of ${topo.instances.length} instances at ${RATE} req/s: ${result.sent} requests in ${result.seconds.toFixed(1)} s, ` +
        `${statusLine(result.counts)}, ${result.failed} failed; exit codes ${restarts.map((r) => r.exitCode).join(',')}, ` +
        `HAProxy state at each exit ${restarts.map((r) => r.stateAtExit).join(',')}, ${retries} HAProxy retries, slowest ${Math.round(result.slowestMs)} ms`,
    );
    expect(restarts).toEqual(topo.instances.map(() => ({ exitCode: 0, stateAtExit: 'DOWN', upAgain: true })));
    expect(result.counts).toEqual({ 200: result.sent });
  }, 120_000);

  it('routes around an instance killed with SIGKILL within its check interval; only requests in flight can fail', async () => {
    const key = await enterpriseKey();
    const victim = topo.instances[1]!;
    const { interMs, fall } = topo.haproxy.checks;
    const before = (await topo.haproxy.stats()).total;
    const load = steadyLoad(key);
    await moreRequests(load, RATE);

    // Freeze it until requests are surely in flight on it (a third of the load piles up there),
    // so the kill cuts some: the case worth counting, not a lucky moment between two requests.
    process.kill(victim.pid()!, 'SIGSTOP');
    const piledUp = await waitFor(() => load.outstanding() >= 10, 10_000, 1);
    const inFlight = load.outstanding(); // the kill below is sent in this same tick
    const killed = topo.kill(1);
    const killedAt = performance.now();
    await killed;
    const down = await topo.haproxy.waitForState(victim.name, 'DOWN', 10_000);
    const downMs = performance.now() - killedAt;
    await moreRequests(load, RATE); // a second routed around it

    await topo.start(1);
    const upAgain = await topo.haproxy.waitForState(victim.name, 'UP', 20_000);
    await moreRequests(load, RATE / 2);
    const result = await finish(load);
    const after = (await topo.haproxy.stats()).total;

    console.log(
      `load-balancer: one of 3 instances killed (SIGKILL) at ${RATE} req/s: ${result.sent} requests, ${statusLine(result.counts)}, ` +
        `${result.failed} failed, ${inFlight} in flight at the kill; DOWN after ${Math.round(downMs)} ms (checks: ${fall} × ${interMs} ms); ` +
        `${after.retries - before.retries} HAProxy retries, ${after.redispatches - before.redispatches} redispatches; UP again: ${upAgain}`,
    );
    expect(piledUp).toBe(true);
    expect(down).toBe(true);
    // Checks every `interMs`, out after `fall` failures; the margin is for a busy machine, not a speed claim.
    expect(downMs).toBeLessThan(fall * interMs + 2000);
    expect(result.failed).toBeLessThanOrEqual(inFlight);
    expect(upAgain).toBe(true);
  }, 90_000);
});
