import { isIPv4, isIPv6 } from 'node:net';

/** The first four hextets of an IPv6 address, written out (`2001:db8::1` → 2001, db8, 0, 0). */
function prefix64(address: string): string[] {
  const [head = '', tail] = address.split('%', 1)[0]!.split('::') as [string, string | undefined];
  const hextets = (part: string) => (part === '' ? [] : part.split(':').flatMap((h) => (h.includes('.') ? ['0', '0'] : [h])));
  const left = hextets(head);
  const right = tail === undefined ? [] : hextets(tail);
  const full = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return full.slice(0, 4).map((h) => Number.parseInt(h, 16).toString(16));
}

/**
 * What a per-address connection cap counts under: an IPv4 address (also when written as
 * IPv4-mapped IPv6), or an IPv6 address's /64, the prefix one subscriber is handed (a host
 * picks any address in it, so capping single IPv6 addresses would cap nothing).
 */
export function addressGroup(address: string | undefined): string {
  if (!address) return '';
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7);
  if (!isIPv6(address.split('%', 1)[0]!)) return address;
  return `${prefix64(address).join(':')}::/64`;
}
