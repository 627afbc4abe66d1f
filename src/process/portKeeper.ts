import type { Worker } from 'node:cluster';
import type { Server } from 'node:http';
import net from 'node:net';

/** Messages between the primary and its workers about the port (process/primary.ts, process/serve.ts). */
const MAY_LISTEN = 'animal-store:may-listen';
const HELD_CONNECTION = 'animal-store:held-connection';
/** How long a worker waits for the primary's answer before it listens anyway. */
const ASK_TIMEOUT_MS = 5000;

/**
 * In the primary (WORKERS > 1): keeps the port answering while no worker listens. node:cluster
 * closes the shared socket when its last worker goes, so until a new one has started
 * (seconds) every connection would be refused. Meanwhile the primary listens itself and holds
 * what arrives, unread, and hands it to the first worker that listens again; a worker asks
 * (`waitForPort`) before it listens, and the primary lets go of the port first.
 * (Hand-built: node:cluster has no way to keep its socket open without workers.)
 */
export function portKeeper(port: number, host: string) {
  let server: net.Server | undefined;
  const held = new Set<net.Socket>();
  const keeper = {
    /** No worker listens any more: take the port and hold the connections that arrive. */
    hold(): void {
      if (server) return;
      const own = net.createServer({ pauseOnConnect: true }, (socket) => {
        held.add(socket);
        socket.on('error', () => {});
        socket.once('close', () => held.delete(socket));
      });
      // A worker listens already (or is about to): it has the port, which is what matters.
      own.on('error', () => own === server && (server = undefined));
      own.listen({ port, host });
      server = own;
    },
    /** A worker is about to listen: give the port back; what is held stays held. */
    release(): void {
      server?.close(); // the listening socket closes at once, so the port is free
      server = undefined;
    },
    /** A worker listens: it gets every connection held. */
    handOver(worker: Worker): void {
      for (const socket of held) {
        held.delete(socket);
        worker.send({ type: HELD_CONNECTION }, socket);
      }
    },
    /** Answers a worker's question (waitForPort): the port is free for it once this replies. */
    answer(worker: Worker, message: unknown): void {
      if ((message as { type?: string } | null)?.type !== MAY_LISTEN) return;
      keeper.release();
      worker.send({ type: MAY_LISTEN });
    },
    stop(): void {
      keeper.release();
      for (const socket of held) socket.destroy();
    },
  };
  return keeper;
}

/**
 * In a worker, before it listens: asks the primary for the port (it may be holding it, see
 * portKeeper) and from then on serves the connections the primary hands over on `server`.
 */
export function waitForPort(server: Server): Promise<void> {
  process.on('message', (message: { type?: string } | null, socket?: net.Socket) => {
    if (message?.type !== HELD_CONNECTION || !socket) return;
    server.emit('connection', socket);
    socket.resume();
  });
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ASK_TIMEOUT_MS);
    const onAnswer = (message: { type?: string } | null) => {
      if (message?.type !== MAY_LISTEN) return;
      process.off('message', onAnswer);
      clearTimeout(timer);
      resolve();
    };
    process.on('message', onAnswer);
    process.send!({ type: MAY_LISTEN });
  });
}
