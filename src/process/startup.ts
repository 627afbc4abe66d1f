import net from 'node:net';
import path from 'node:path';
import type { Config } from '../config.js';
import { anotherServer, ownerOf } from '../db/embeddedOwner.js';
import { projectRoot } from '../paths.js';
import { StartupError } from '../startupError.js';

interface Address {
  host: string;
  port: number;
  /** The variables that set them: HOST and PORT by default (METRICS_HOST and METRICS_PORT for the metrics listener). */
  variables?: { host: string; port: string };
  /** The pid of this checkout's own server when it is the one listening on the port (it says so when asked). */
  heldBy?: number;
}

/** A failure to listen on the address, in words naming its variables. Undefined for anything else. */
export function explainListenFailure(err: Error & { code?: string }, { host, port, variables = { host: 'HOST', port: 'PORT' }, heldBy }: Address): StartupError | undefined {
  const [HOST, PORT] = [variables.host, variables.port];
  if (err.code === 'EADDRINUSE' && heldBy !== undefined) {
    const message = `The server started from this checkout, pid ${heldBy}, holds ${PORT} ${port} on ${host}. Stop it (Ctrl-C in its terminal, or kill ${heldBy}), or set ${PORT} to a free port (for example ${PORT}=${port + 1}).`;
    return new StartupError(message, { cause: err });
  }
  const unresolved = `${HOST} "${host}" is not a name this machine can resolve. Set ${HOST} to an address, such as 127.0.0.1 or 0.0.0.0.`;
  const messages: Record<string, string> = {
    EADDRINUSE: `${PORT} ${port} on ${host} is already in use, most likely by another server. Stop it, or set ${PORT} to a free port (for example ${PORT}=${port + 1}).`,
    EACCES: `${PORT} ${port} on ${host} needs privileges this user does not have (ports below 1024 do). Set ${PORT} to 1024 or above.`,
    EADDRNOTAVAIL: `${HOST} ${host} is not an address of this machine. Set ${HOST} to one of its addresses: 127.0.0.1 (this machine only) or 0.0.0.0 (every interface).`,
    ENOTFOUND: unresolved,
    EAI_AGAIN: unresolved,
  };
  const message = messages[err.code ?? ''];
  return message === undefined ? undefined : new StartupError(message, { cause: err });
}

/**
 * Fails with a StartupError naming PORT or HOST unless HOST:PORT can be listened on now: checked
 * before the database is opened, which takes seconds on a first start, so that a port in use is
 * told at once. (The server listens for real later; the rare process that takes the port in
 * between is told the same way by failToStart.)
 */
export function checkListenable(address: Address): Promise<void> {
  if (address.port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err) => reject(explainListenFailure(err, address) ?? err));
    server.listen({ host: address.host, port: address.port, exclusive: true }, () => server.close(() => resolve()));
  });
}

/**
 * What is checked before anything is opened, and by `npm start` before it compiles (scripts/prestart.mjs):
 * first whether another server holds the embedded store in DATA_DIR (the one sentence that matters
 * then: the ports it holds follow from it), then the ports, naming this checkout's own server
 * (the one on ./data) when it is the one that holds one.
 */
export async function checkBeforeStart(config: Config): Promise<void> {
  if (!config.databaseUrl) {
    const owner = await ownerOf(config.dataDir);
    if (owner !== undefined) throw new StartupError(anotherServer(owner, config.dataDir));
  }
  const checkout = await ownerOf(path.join(projectRoot, 'data'));
  const own = checkout === 'alive' ? undefined : checkout;
  await checkListenable({ host: config.host, port: config.port, heldBy: own?.port === config.port ? own.pid : undefined });
  const { enabled, host, port } = config.metrics;
  if (enabled) {
    await checkListenable({ host, port, variables: { host: 'METRICS_HOST', port: 'METRICS_PORT' }, heldBy: own?.metricsPort === port ? own.pid : undefined });
  }
}

/** An error with its causes, as a stack trace each. */
function stacks(err: unknown): string {
  const lines: string[] = [];
  for (let e: unknown = err; e !== undefined && lines.length < 5; e = (e as { cause?: unknown }).cause) {
    lines.push(e instanceof Error ? (e.stack ?? e.message) : String(e));
  }
  return lines.join('\nCaused by: ');
}

/**
 * Prints why the service could not start on stderr and exits 1: the sentence of a StartupError
 * alone; anything else with a pointer to LOG_LEVEL=debug, which adds the stack to either.
 */
export function failToStart(err: unknown, { logLevel, address }: { logLevel: string | undefined; address?: Address }): never {
  const explained = err instanceof StartupError ? err : address && err instanceof Error ? explainListenFailure(err, address) : undefined;
  const verbose = logLevel === 'debug' || logLevel === 'trace';
  let text = explained?.message ?? `Could not start: ${err instanceof Error ? err.message : String(err)}.`;
  if (verbose) text += `\n\n${stacks(err)}`;
  else if (!explained) text += ' Run with LOG_LEVEL=debug to see where it failed.';
  process.stderr.write(`${text}\n`);
  process.exit(1);
}
