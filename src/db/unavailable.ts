/** Errors that mean "the database cannot be reached right now", as opposed to a bug in a query. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOENT']);
// Postgres SQLSTATEs: connection exceptions, shutdown, too many connections, statement
// timeout (57014) and lock timeout (55P03): the statement was cancelled and rolled back.
const SQLSTATE_PREFIXES = ['08', '57P', '53300', '57014', '55P03'];
const MESSAGES = [
  'Connection terminated',
  'Query read timeout',
  'Client has encountered a connection error',
  'Cannot use a pool after calling end',
  'is not currently accepting connections',
  'the database system is',
];

export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code)) return true;
    if (SQLSTATE_PREFIXES.some((p) => code.startsWith(p))) return true;
  }
  return MESSAGES.some((m) => err.message.includes(m));
}

/**
 * pg-pool's error when no pooled connection came free within its wait limit
 * (connectionTimeoutMillis) while all were busy: the database answers, this instance is
 * overloaded. A new connection that cannot be opened in time fails otherwise ('Connection
 * terminated due to connection timeout'): that is the database being unavailable.
 */
export function isPoolWaitTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'timeout exceeded when trying to connect';
}
