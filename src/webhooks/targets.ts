import dns from 'node:dns';
import net from 'node:net';

/**
 * Where webhooks may not go (SSRF): loopback, private (RFC 1918), shared (CGNAT), link-local
 * (cloud metadata included), unique-local IPv6, multicast, unspecified and reserved ranges.
 * IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4 address inside them.
 */
const blocked = new net.BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(address, prefix, 'ipv4');
for (const [address, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['100::', 64]] as const) {
  blocked.addSubnet(address, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const match = /^(?:::ffff:|64:ff9b::)(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i.exec(address);
  if (!match) return undefined;
  if (match[1]) return match[1];
  const high = parseInt(match[2]!, 16);
  const low = parseInt(match[3]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Whether the service may connect to this IP address. */
export function isAllowedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !blocked.check(address, 'ipv4');
  if (family !== 6) return false;
  const inner = embeddedIpv4(address);
  return inner ? isAllowedAddress(inner) : !blocked.check(address, 'ipv6');
}

export class TargetNotAllowed extends Error {}

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks an endpoint URL when it is set: http(s), and every address its host resolves to
 * allowed (unless private targets are allowed, for development). Throws TargetNotAllowed
 * with a sentence saying why.
 */
export async function checkTargetUrl(text: string, allowPrivate: boolean): Promise<void> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetNotAllowed('The URL is not a valid absolute URL.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TargetNotAllowed('The URL must be http or https.');
  if (allowPrivate) return;
  const host = hostOf(url);
  const addresses = net.isIP(host) ? [host] : await dns.promises.lookup(host, { all: true, verbatim: true }).then(
    (found) => found.map((a) => a.address),
    () => {
      throw new TargetNotAllowed(`The URL's host ${host} does not resolve.`);
    },
  );
  const refused = addresses.find((address) => !isAllowedAddress(address));
  if (refused !== undefined) throw new TargetNotAllowed(`The URL's host resolves to ${refused}, an address webhooks are not sent to (loopback, private, link-local or reserved).`);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request that hands the socket only allowed addresses: the address
 * checked is the one connected to, so a DNS answer that changes between the check at
 * creation and the delivery (rebinding) changes nothing.
 */
export function checkedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (err, found) => {
    if (err) return callback(err, '');
    const allowed = found.filter((a) => isAllowedAddress(a.address));
    if (allowed.length === 0) {
      const refused = Object.assign(new Error(`address not allowed: ${hostname} resolves to ${found.map((a) => a.address).join(', ')}`), { code: 'EADDRNOTALLOWED' });
      return callback(refused, '');
    }
    if (options.all) return callback(null, allowed);
    callback(null, allowed[0]!.address, allowed[0]!.family);
  });
}

/** An IP-literal host is connected to without any lookup: check it before connecting. */
export function literalAddressAllowed(url: URL): boolean {
  const host = hostOf(url);
  return net.isIP(host) === 0 || isAllowedAddress(host);
}
