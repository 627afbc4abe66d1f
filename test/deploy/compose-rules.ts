// The rules docker-compose.yml must keep, checked on `docker compose config` output (so
// anchors, merges and overrides are resolved): tsx test/deploy/compose-rules.ts <base.yml> [<with-ports.yml>]
// Called by test/deploy/deploy-check.sh. Prints each rule; exits 1 on the first broken one.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

interface Service {
  ports?: (string | { host_ip?: string; published?: string | number })[];
  networks?: string[] | Record<string, unknown>;
  environment?: Record<string, string> | string[];
  deploy?: { replicas?: number };
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: unknown; disable?: boolean };
  stop_grace_period?: string;
  command?: string[] | string;
  volumes?: (string | { source?: string; target?: string })[];
}
interface Compose {
  services: Record<string, Service>;
  networks?: Record<string, { internal?: boolean } | null>;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let passed = 0;
function rule(ok: boolean, text: string): void {
  if (!ok) {
    console.error(`  FAIL  ${text}`);
    process.exit(1);
  }
  passed++;
  console.log(`  ok    ${text}`);
}

const load = (file: string) => parse(readFileSync(file, 'utf8')) as Compose;
const env = (s: Service): Record<string, string> =>
  Array.isArray(s.environment)
    ? Object.fromEntries(s.environment.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
    : (s.environment ?? {});
const networksOf = (s: Service) => (Array.isArray(s.networks) ? s.networks : Object.keys(s.networks ?? {}));
// "127.0.0.1:3000:3000/tcp" or the long form; the host address a port is published on.
const hostIp = (p: NonNullable<Service['ports']>[number]) => (typeof p === 'string' ? (p.split(':').length === 3 ? p.split(':')[0] : '') : (p.host_ip ?? ''));
/** Docker's duration syntax ("20s", "1m30s") in seconds. */
const UNIT_SECONDS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6 };
function seconds(text: string): number {
  let total = 0;
  for (const [, n, unit] of text.matchAll(/([\d.]+)(ms|us|h|m|s)/g)) total += Number(n) * UNIT_SECONDS[unit!]!;
  return total;
}

const [baseFile, portsFile] = process.argv.slice(2);
if (!baseFile) throw new Error('usage: compose-rules.ts <config of docker-compose.yml> [<config with docker-compose.ports.yml>]');
const base = load(baseFile);
const { api, lb, migrate, postgres, redis } = base.services;
rule(Boolean(api && lb && migrate && postgres && redis), 'services api, lb, migrate, postgres, redis exist');

const published = Object.entries(base.services).filter(([, s]) => (s.ports ?? []).length > 0);
rule(published.length === 1 && published[0]![0] === 'lb', 'only the balancer (lb) publishes ports');
rule(lb!.ports!.every((p) => hostIp(p) === '127.0.0.1'), `lb publishes on 127.0.0.1 only: ${JSON.stringify(lb!.ports)}`);
const internal = (n: string) => base.networks?.[n]?.internal === true;
for (const name of ['postgres', 'redis'] as const) {
  rule(networksOf(base.services[name]!).every(internal), `${name} is only on internal networks (${networksOf(base.services[name]!).join(', ')})`);
}

const apiEnv = env(api!);
rule((api!.deploy?.replicas ?? 1) >= 3, `api runs ${api!.deploy?.replicas} replicas, with no host port (scalable)`);
rule(apiEnv.HOST === '0.0.0.0', 'api listens on 0.0.0.0');
rule(Boolean(apiEnv.TRUST_PROXY) && apiEnv.TRUST_PROXY !== 'false', `api believes the balancer's X-Forwarded-For (TRUST_PROXY=${apiEnv.TRUST_PROXY})`);
rule(Boolean(apiEnv.DATABASE_URL && apiEnv.REDIS_URL), 'api has DATABASE_URL and REDIS_URL (shared store and limits)');
const drain = Number(apiEnv.SHUTDOWN_DRAIN_SECONDS ?? 5);
const grace = Number(apiEnv.SHUTDOWN_GRACE_SECONDS ?? 10);
const stop = seconds(api!.stop_grace_period ?? '10s');
rule(stop > drain + grace, `api stop_grace_period ${stop} s > drain ${drain} s + grace ${grace} s`);
const deps = api!.depends_on as Record<string, { condition?: string }>;
rule(deps?.migrate?.condition === 'service_completed_successfully', 'api starts after migrate completed successfully');
const migrateCommand = ([] as string[]).concat(migrate!.command ?? []).join(' ');
const migrateScript = /dist\/(scripts\/\S+)\.js/.exec(migrateCommand)?.[1];
rule(Boolean(migrateScript && existsSync(path.join(root, `${migrateScript}.ts`))), `migrate runs ${migrateCommand} (built from ${migrateScript}.ts)`);
for (const name of ['api', 'postgres', 'redis']) {
  const check = base.services[name]!.healthcheck;
  rule(Boolean(check?.test) && !check?.disable, `${name} has a health check`);
}

// The balancer's configuration, as mounted, against the API's settings.
const mount = (lb!.volumes ?? []).map((v) => (typeof v === 'string' ? v.split(':')[0]! : (v.source ?? ''))).find((v) => v.endsWith('haproxy.cfg'));
rule(Boolean(mount && existsSync(path.resolve(root, mount))), `lb mounts ${mount && path.relative(root, path.resolve(root, mount))}`);
const cfg = readFileSync(path.resolve(root, mount!), 'utf8');
rule(/^\s*option httpchk GET \/readyz\s*$/m.test(cfg), 'HAProxy checks GET /readyz');
const template = /^\s*server-template\s+\S+\s+\d+\s+(\S+):(\d+)/m.exec(cfg);
rule(template?.[1] === 'api' && template[2] === (apiEnv.PORT ?? '3000'), `HAProxy resolves every replica of api:${apiEnv.PORT} (server-template, resolvers)`);
const inter = Number(/\binter (\d+)s\b/.exec(cfg)?.[1]);
const fall = Number(/\bfall (\d+)\b/.exec(cfg)?.[1]);
rule(inter * fall < drain, `HAProxy marks a draining replica down after ${inter} s x ${fall} = ${inter * fall} s, within its ${drain} s drain`);
rule(/^\s*http-request del-header X-Forwarded-For/m.test(cfg) && /^\s*option forwardfor/m.test(cfg), "HAProxy replaces the client's X-Forwarded-For with the address it sees");

if (portsFile) {
  const withPorts = load(portsFile);
  for (const name of ['postgres', 'redis']) {
    const ports = withPorts.services[name]!.ports ?? [];
    rule(ports.length > 0 && ports.every((p) => hostIp(p) === '127.0.0.1'), `with docker-compose.ports.yml, ${name} is published on 127.0.0.1 only`);
    rule(networksOf(withPorts.services[name]!).some((n) => withPorts.networks?.[n]?.internal !== true), `with docker-compose.ports.yml, ${name} is also on a non-internal network (else Docker publishes nothing)`);
  }
}
console.log(`compose rules: ${passed} passed, 0 failed`);
