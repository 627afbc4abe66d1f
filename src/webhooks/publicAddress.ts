import net from 'node:net';
import ipaddr from 'ipaddr.js';

/*
 * Which IP addresses webhooks may go to: only what ipaddr.js (a maintained table of the IANA
 * special-purpose registries) calls `unicast`. Every name it gives besides (loopback, private,
 * linkLocal, uniqueLocal, carrierGradeNat, multicast, broadcast, unspecified, reserved, which
 * holds the documentation ranges and the 6to4 relay anycast 192.88.99.0/24, teredo, …) is refused.
 * Read in ipaddr.js 2.5.0's SpecialRanges; test/events/ssrf.test.ts lists each form, so an upgrade
 * whose table drops one fails there.
 */

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** The IPv4 address in two 16-bit parts of an IPv6 address. */
const ipv4From = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
const last32 = (parts: number[]) => ipv4From(parts[6]!, parts[7]!);

/**
 * IPv6 forms that carry an IPv4 address, and where it sits: each is judged by that IPv4 address,
 * since that is where a packet sent to it ends up (a translator or tunnel delivers it there).
 */
const WRAPPERS: Array<[range: [IPv6, number], inner: (parts: number[]) => IPv4]> = [
  // IPv4-mapped, ::ffff:a.b.c.d (the library's ipv4Mapped).
  [ipaddr.IPv6.parseCIDR('::ffff:0:0/96'), last32],
  // SIIT, ::ffff:0:a.b.c.d, RFC 6145 (rfc6145).
  [ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96'), last32],
  // NAT64 well-known prefix, RFC 6052: only the /96 layout exists for it (rfc6052).
  [ipaddr.IPv6.parseCIDR('64:ff9b::/96'), last32],
  // 6to4, RFC 3056: the IPv4 address in bits 16-48 (6to4).
  [ipaddr.IPv6.parseCIDR('2002::/16'), (parts) => ipv4From(parts[1]!, parts[2]!)],
  // IPv4-compatible, ::a.b.c.d (RFC 4291, deprecated): the library's table misses it and calls
  // ::7f00:1 `unicast`. Holds :: and ::1 too, judged as 0.0.0.0 and 0.0.0.1: refused all the same.
  [ipaddr.IPv6.parseCIDR('::/96'), last32],
];
/*
 * Not unwrapped, so refused by the library's name for them:
 * - local-use NAT64, 64:ff9b:1::/48 (RFC 8215, `rfc6052` like the well-known prefix): not globally
 *   reachable by definition, and the operator picks where the IPv4 address sits (RFC 6052's /32../96
 *   layouts), so no one position can be judged; a receiver never needs it.
 * - Teredo, 2001::/32 (`teredo`): it names two IPv4 addresses (the server's in bits 32-64, the
 *   client's XOR 0xffffffff in the last 32) and is reached through whatever relay the network
 *   picks; public Teredo service is long shut down, so no real receiver is only reachable over it.
 */

/** The IPv4 address an IPv6 address carries, for the forms in WRAPPERS. */
function carriedIpv4(address: IPv6): IPv4 | undefined {
  const wrapper = WRAPPERS.find(([range]) => address.match(range));
  return wrapper?.[1](address.parts);
}

/**
 * Whether the service may connect to this IP address: public unicast, IPv4 inside IPv6 judged as
 * that IPv4 address. Anything net.isIP does not call an address (what a socket would look up) is not one.
 */
export function isAllowedAddress(text: string): boolean {
  if (net.isIP(text) === 0 || !ipaddr.isValid(text)) return false;
  const address = ipaddr.parse(text);
  if (address instanceof ipaddr.IPv4) return address.range() === 'unicast';
  return (carriedIpv4(address) ?? address).range() === 'unicast';
}
