import { constants, fstatSync, openSync } from 'node:fs';
import pino, { type DestinationStream } from 'pino';

/** While stdout takes nothing, lines wait up to this much; later ones are dropped (sonic-boom's maxLength). */
const MAX_WAITING_BYTES = 8 * 1024 * 1024;

/**
 * What the log writes to: on Linux, when stdout is a terminal or a pipe, a file description of
 * its own, opened non-blocking (as libuv does for a terminal), so that a terminal or
 * pipe that takes nothing more answers EAGAIN rather than holding the main thread in write(2).
 * stdout's own description is shared with npm and the shell, and blocking. Anything else is
 * stdout itself: a file (never full), a socket, another system.
 */
function logDescriptor(): number {
  try {
    const stat = fstatSync(1);
    // A socket (a supervisor's, a test's child_process pipe) cannot be opened again: Node makes
    // its description non-blocking when it opens process.stdout on it, which this asks for.
    if (stat.isSocket()) return process.stdout.fd;
    if (process.platform !== 'linux' || (!stat.isFIFO() && !stat.isCharacterDevice())) return 1;
    const { O_WRONLY, O_APPEND, O_NONBLOCK, O_NOCTTY } = constants;
    return openSync('/proc/self/fd/1', O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY);
  } catch {
    return 1;
  }
}

const goneListeners = new Set<(err: NodeJS.ErrnoException) => void>();
let gone: NodeJS.ErrnoException | undefined;

/**
 * Calls `listener` once stdout is gone: a write failed for good (EIO from a terminal that hung
 * up, EPIPE from a pipe nobody reads any more). Nothing is written to it after that.
 */
export function onStdoutGone(listener: (err: NodeJS.ErrnoException) => void): void {
  if (gone) listener(gone);
  else goneListeners.add(listener);
}

let destination: DestinationStream | undefined;

/**
 * The log's stdout, one per process: pino's destination (sonic-boom), written synchronously on
 * the main thread, in order, gathered up to 4 KiB and at least once a second (a thread-pool
 * write per line cost more; an asynchronous write still in flight at exit landed after the
 * lines flushed then). No write ever waits for stdout: a full one (EAGAIN) keeps the lines for
 * the next write (up to MAX_WAITING_BYTES), one that fails otherwise is gone (onStdoutGone).
 * At exit what is left is written if stdout takes it now, else dropped: the exit never waits.
 */
export function stdoutDestination(): DestinationStream {
  if (destination) return destination;
  let full = false;
  const stream = pino.destination({
    dest: logDescriptor(),
    sync: true,
    minLength: 4096,
    maxLength: MAX_WAITING_BYTES,
    periodicFlush: 1000,
    // Never sleep on the main thread waiting for stdout (sonic-boom's default, 100 ms a try, for ever): the 'error' below.
    retryEAGAIN: () => false,
  });
  stream.on('write', () => (full = false));
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EAGAIN' || err.code === 'EBUSY') {
      full = true; // the lines stay, written by the next write or flush
      return;
    }
    if (gone) return;
    gone = err;
    for (const listener of goneListeners) listener(err);
    goneListeners.clear();
  });
  process.once('exit', () => {
    if (gone || full) return;
    // One write first: it fails as an 'error' (which marks stdout gone or full), where flushSync
    // would retry any error other than EAGAIN for ever (a terminal that hung up answers EIO).
    stream.flush();
    if (gone || full) return;
    try {
      stream.flushSync(); // what one write did not take; throws on EAGAIN (retryEAGAIN)
    } catch {
      // stdout is full: the rest is dropped
    }
  });
  destination = stream;
  return stream;
}
