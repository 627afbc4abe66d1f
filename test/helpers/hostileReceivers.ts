import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/** A receiver that misbehaves; `requests` counts the connections that sent it something, `peakOpen` the most of them open at once. */
export interface HostileReceiver {
  url: string;
  port: number;
  requests: number;
  peakOpen: number;
  close(): Promise<void>;
}

async function listen(server: net.Server, sockets: Set<net.Socket>): Promise<{ port: number; close: () => Promise<void> }> {
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

function raw(onRequest: (socket: net.Socket, receiver: HostileReceiver) => void): Promise<HostileReceiver> {
  const sockets = new Set<net.Socket>();
  const receiver = { url: '', port: 0, requests: 0, peakOpen: 0, close: async () => {} } as HostileReceiver;
  let open = 0;
  const server = net.createServer((socket) => socket.once('data', () => {
    receiver.requests++;
    receiver.peakOpen = Math.max(receiver.peakOpen, ++open);
    socket.once('close', () => open--);
    onRequest(socket, receiver);
  }));
  return listen(server, sockets).then(({ port, close }) => Object.assign(receiver, { url: `http://127.0.0.1:${port}/hook`, port, close }));
}

/** Reads the request and never answers (the socket stays open). */
export const silentReceiver = () => raw(() => {});

/** Answers a status line, then one byte of a header every 100 ms, never ending the head. */
export const tricklingReceiver = () =>
  raw((socket) => {
    socket.write('HTTP/1.1 200 OK\r\nx-trickle: ');
    const timer = setInterval(() => socket.write('a'), 100);
    socket.on('close', () => clearInterval(timer));
  });

export interface HugeReceiver extends HostileReceiver {
  /** Answers written to the end (all 50 MB taken by the client). */
  finished: number;
  /** Answers whose connection closed before their body was all written. */
  cutShort: number;
}

/** Answers 200 with a 50 MB body, written as fast as the client takes it. */
export async function hugeBodyReceiver(bytes = 50 * 1024 * 1024): Promise<HugeReceiver> {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  const sockets = new Set<net.Socket>();
  const receiver = { url: '', port: 0, requests: 0, peakOpen: 0, finished: 0, cutShort: 0, close: async () => {} } as HugeReceiver;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.requests++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes });
      let written = 0;
      const write = () => {
        while (written < bytes && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        if (!res.destroyed) res.end();
      };
      res.on('finish', () => receiver.finished++);
      res.on('close', () => {
        if (!res.writableFinished) receiver.cutShort++;
      });
      write();
    });
  });
  const { port, close } = await listen(server, sockets);
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/hook`, port, close });
}

/** Answers 302 with `location`. */
export async function redirectingReceiver(location: string): Promise<HostileReceiver> {
  const sockets = new Set<net.Socket>();
  const receiver = { url: '', port: 0, requests: 0, peakOpen: 0, close: async () => {} } as HostileReceiver;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      receiver.requests++;
      res.writeHead(302, { location }).end();
    });
  });
  const { port, close } = await listen(server, sockets);
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/hook`, port, close });
}

/** How a paced receiver answers: 204 or 500 after `delayMs`, 204 at once and no answer by turns, or never. */
export type PacedMode = 'slow204' | 'slow500' | 'alternating' | 'silent';

export interface PacedReceiver {
  url: string;
  /** Requests heard. */
  requests: number;
  /** Requests open at once, at most, per `?endpoint=` of the URL they came to, and over all. */
  peakPerEndpoint: Map<string, number>;
  peakOpen: number;
  open: number;
  close(): Promise<void>;
}

/**
 * A receiver for many endpoints at once (`?endpoint=N` tells them apart) that answers as `mode` says
 * and counts the requests open at once per endpoint. Closing it cuts off every request it holds.
 */
export async function pacedReceiver(mode: PacedMode, delayMs: number): Promise<PacedReceiver> {
  const openPer = new Map<string, number>();
  const receiver: PacedReceiver = { url: '', requests: 0, peakPerEndpoint: new Map(), peakOpen: 0, open: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const endpoint = new URL(req.url ?? '/', 'http://x').searchParams.get('endpoint') ?? '';
    const n = receiver.requests++;
    openPer.set(endpoint, (openPer.get(endpoint) ?? 0) + 1);
    receiver.peakPerEndpoint.set(endpoint, Math.max(receiver.peakPerEndpoint.get(endpoint) ?? 0, openPer.get(endpoint)!));
    receiver.peakOpen = Math.max(receiver.peakOpen, ++receiver.open);
    // Open until answered (as the sender sees it: its request is over once the answer is sent), or cut off.
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      openPer.set(endpoint, openPer.get(endpoint)! - 1);
      receiver.open--;
    };
    res.on('close', close);
    req.resume();
    if (mode === 'silent' || (mode === 'alternating' && n % 2 === 1)) return;
    const answer = () => {
      close();
      res.writeHead(mode === 'slow500' ? 500 : 204).end();
    };
    if (mode === 'alternating') answer();
    else setTimeout(answer, delayMs).unref();
  });
  server.keepAliveTimeout = 1000;
  const sockets = new Set<net.Socket>();
  const { port, close } = await listen(server, sockets);
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/hook`,
    close: async () => {
      server.closeAllConnections();
      await close();
    },
  });
}
