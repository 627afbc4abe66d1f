import http from 'node:http';
import https from 'node:https';
import { WEBHOOK_RESPONSE_BYTES } from '../limits.js';
import { addressNotAllowed, carriesCredentials, checkedLookup, literalAddressAllowed } from './targets.js';

/** The outcome of one POST: the status when one came, else why not. */
export interface Attempt {
  status: number | null;
  error: string | null;
  durationMs: number;
  /** No answer within the timeout (what the circuit breaker counts). */
  timedOut?: boolean;
}

/**
 * Connections kept open between deliveries (a busy endpoint's next delivery skips the connect, and
 * its receiver the accept). An idle one is closed after 4 s, below the 5 s a Node receiver keeps
 * one; the address a kept connection goes to was checked when it connected.
 */
const keepAlive = { keepAlive: true, timeout: 4000, maxFreeSockets: 8, scheduling: 'lifo' as const };
const transports = { 'http:': { request: http.request, agent: new http.Agent(keepAlive) }, 'https:': { request: https.request, agent: new https.Agent(keepAlive) } };

/**
 * POSTs a body and resolves with the status as soon as the answer's head arrives; never throws.
 * Redirects are never followed (http.request does not), the whole attempt (connect, send,
 * head) is bounded by `timeoutMs`, and at most WEBHOOK_RESPONSE_BYTES of the answer are read
 * before the connection is dropped. A kept connection the receiver had closed is retried on another. A URL with credentials is never sent. Without `allowPrivate` the
 * address connected to must be allowed (targets.ts): a literal is checked here, a name in the lookup the socket uses.
 */
export function postWebhook(target: string, body: string, headers: Record<string, string>, opts: { timeoutMs: number; allowPrivate: boolean }, started = performance.now()): Promise<Attempt> {
  const done = (status: number | null, error: string | null): Attempt => ({ status, error, durationMs: Math.round(performance.now() - started) });
  return new Promise<Attempt & { retry?: true }>((resolve) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return resolve(done(null, 'invalid URL'));
    }
    // Stored before create/update refused them: never sent (http.request would send them as Basic auth), never said.
    if (carriesCredentials(url)) return resolve(done(null, 'URL not allowed: it contains a user name or password'));
    if (!opts.allowPrivate && !literalAddressAllowed(url)) return resolve(done(null, addressNotAllowed(url.hostname)));
    const transport = url.protocol === 'https:' ? transports['https:'] : transports['http:'];
    const request = transport.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'animal-store-webhooks/1' },
      agent: transport.agent,
      ...(!opts.allowPrivate && { lookup: checkedLookup as never }),
    });
    // One deadline for the attempt, a retry on a fresh connection included.
    const timer = setTimeout(() => request.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })), started + opts.timeoutMs - performance.now());
    let settled = false;
    const settle = (attempt: Attempt & { retry?: true }) => {
      if (settled) return;
      settled = true;
      resolve(attempt);
    };
    request.on('response', (response) => {
      settle(done(response.statusCode ?? null, null));
      // Read the answer so the connection can be kept, but never more than the limit: past it, drop the connection.
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > WEBHOOK_RESPONSE_BYTES) response.destroy();
      });
      response.on('end', () => clearTimeout(timer));
      response.on('close', () => clearTimeout(timer));
      response.on('error', () => {});
    });
    request.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // A kept connection the receiver closed just as it was reused: the request never reached it (Node's documented retry).
      if (request.reusedSocket && err.code === 'ECONNRESET' && !settled) return settle({ ...done(null, null), retry: true });
      const reason = err.code === 'ETIMEDOUT' ? `timeout after ${opts.timeoutMs} ms` : err.code === 'EADDRNOTALLOWED' ? err.message : `${err.code ?? 'error'}: ${err.message}`;
      settle({ ...done(null, reason), timedOut: err.code === 'ETIMEDOUT' });
    });
    request.end(body);
  }).then((attempt) => (attempt.retry ? postWebhook(target, body, headers, opts, started) : attempt));
}
