/**
 * What REDIS_URL names: one Redis (`redis://`, `rediss://`, as ioredis reads them) or a
 * Redis Cluster by its seed nodes: `redis+cluster://[user:password@]host1:port1,host2:port2`
 * (`rediss+cluster://` for TLS). The seeds only bootstrap: the client learns every master
 * from them, so any reachable one will do. No ioredis import here, nor any import: config.ts validates with it (configParts/ holds what config.ts needs and the rooms that read the configuration share).
 */
const CLUSTER = /^(rediss?)\+cluster:\/\/(?:([^@/?#]*)@)?([^@/?#]+)\/?$/;
// host:port, with an IPv6 host in brackets; the port may be left out (6379).
const SEED = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?$/;

/** Parses REDIS_URL; throws a message naming the variable on a malformed cluster URL. */
export function parseRedisUrl(url: string) {
  if (/^rediss?:\/\//.test(url)) return { kind: 'node' as const, url };
  const m = CLUSTER.exec(url);
  if (!m) throw new Error('REDIS_URL must be redis://…, rediss://…, or redis+cluster://host:port,host:port (rediss+cluster:// for TLS).');
  const [, scheme, userinfo, hosts] = m;
  const nodes = hosts!.split(',').map((seed) => {
    const s = SEED.exec(seed);
    const port = Number(s?.[2] ?? 6379);
    if (!s || port < 1 || port > 65535) throw new Error(`REDIS_URL: "${seed}" is not host:port.`);
    return { host: s[1]!.replace(/^\[|\]$/g, ''), port };
  });
  // user:password, :password or user, percent-encoded as in any URL.
  const colon = userinfo?.indexOf(':') ?? -1;
  const username = userinfo === undefined ? undefined : decoded(colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = userinfo === undefined || colon < 0 ? undefined : decoded(userinfo.slice(colon + 1));
  return { kind: 'cluster' as const, nodes, username, password, tls: scheme === 'rediss' };
}

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text) || undefined;
  } catch {
    throw new Error('REDIS_URL: malformed percent-encoding in the user or password.');
  }
}
