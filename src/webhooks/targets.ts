import dns from 'node:dns';
import net from 'node:net';
import { isAllowedAddress } from './publicAddress.js';

export class TargetNotAllowed extends Error {}

/**
 * Credentials in the URL would be stored and shown back in full, and sent as Basic auth:
 * refused when set, and a URL stored with them before that is never sent.
 */
export const carriesCredentials = (url: URL) => url.username !== '' || url.password !== '';

/** Said with every refused address, at creation and at delivery: the usual mistake is a receiver on the developer's machine. */
const LOCAL_HINT = 'for a receiver on your own machine in development, see docs/WEBHOOKS.md#local-development: WEBHOOK_ALLOW_PRIVATE_TARGETS=true';

const notPublic = (host: string) =>
  `The URL's host ${host} is or resolves to an address webhooks are not sent to (loopback, private, link-local, documentation or other reserved ranges); ${LOCAL_HINT}.`;

/** The URL's host without IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks an endpoint URL when it is set: http(s), no credentials, and every address its host
 * resolves to allowed (unless private targets are allowed, for development). Throws TargetNotAllowed
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
  // Not echoed: the message would show the password.
  if (carriesCredentials(url)) throw new TargetNotAllowed('The URL must not contain a user name or password; receivers authenticate deliveries by their signature.');
  if (allowPrivate) return;
  const host = hostOf(url);
  const addresses = net.isIP(host) ? [host] : await dns.promises.lookup(host, { all: true, verbatim: true }).then(
    (found) => found.map((a) => a.address),
    () => {
      throw new TargetNotAllowed(`The URL's host ${host} does not resolve.`);
    },
  );
  // The address itself is not said: it would tell anyone what internal names resolve to.
  if (!addresses.every(isAllowedAddress)) throw new TargetNotAllowed(notPublic(url.hostname));
}

/** Why a delivery was refused for its address (its delivery log's `error`). */
export const addressNotAllowed = (what: string) => `address not allowed: ${what} (not a public address; ${LOCAL_HINT})`;

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
      const refused = Object.assign(new Error(addressNotAllowed(`${hostname} resolves to ${found.map((a) => a.address).join(', ')}`)), { code: 'EADDRNOTALLOWED' });
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
