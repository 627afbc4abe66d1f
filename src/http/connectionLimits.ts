import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import { addressGroup } from './addressGroup.js';
import { closeIdle, type Connection } from './connectionTable.js';

export interface ConnectionLimits {
  maxConnections: number;
  /** 0: no cap per address. */
  maxConnectionsPerAddress: number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** How many connections are open (for the metrics). */
    openConnections(): number;
  }
}

export type Cap = 'total' | 'address';

/** Beyond what a new connection needs, this share of a cap is freed at once, so that the next ones find room without another look. */
const HEADROOM = 0.01;

/**
 * Caps open connections in total (MAX_CONNECTIONS) and per peer address (IPv6 by /64), so
 * one client holding many (slow or idle) connections cannot take the sockets everyone else
 * needs. At a cap, a new connection is kept and idle keep-alive connections are closed to make
 * room, longest idle first (of that address, for its cap); only when none is idle is the new
 * one closed at once, before anything is read, and counted and logged. Node's own
 * server.maxConnections would refuse the new connection while idle ones hold the table.
 */
export default fp(
  async function connectionLimitsPlugin(app: FastifyInstance, opts: ConnectionLimits & { clock: Clock }) {
    const { maxConnections, maxConnectionsPerAddress: perAddress, clock } = opts;
    const all = new Map<Socket, Connection>();
    const byGroup = new Map<string, Set<Connection>>();
    app.decorate('openConnections', () => all.size);

    const capName = { total: 'MAX_CONNECTIONS', address: 'MAX_CONNECTIONS_PER_ADDRESS' } as const;

    /** Makes room for one more connection among `connections` (at most `limit` open); false when none of them is idle. */
    const makeRoom = (cap: Cap, connections: Connection[], limit: number, group: string): boolean => {
      // Closed connections are listed until their 'close' event.
      const open = connections.reduce((n, c) => (c.socket.destroyed ? n : n + 1), 0);
      if (open < limit) return true;
      const needed = open - limit + 1;
      const closed = closeIdle(connections, needed + Math.floor(limit * HEADROOM), clock());
      if (closed > 0) {
        app.metrics?.idleConnectionsClosed(cap, closed);
        app.faults.report(`closed idle connections to make room (${capName[cap]} ${limit} reached)`, { address: group, closed }, 'info');
      }
      if (closed >= needed) return true;
      app.metrics?.connectionRefused(cap);
      app.faults.report(`connection refused: ${capName[cap]} ${limit} reached and none idle`, { address: group });
      return false;
    };

    app.server.on('connection', (socket: Socket) => {
      const group = addressGroup(socket.remoteAddress);
      let peers = byGroup.get(group);
      const refused =
        (perAddress > 0 && peers !== undefined && peers.size >= perAddress && !makeRoom('address', [...peers], perAddress, group)) ||
        (all.size >= maxConnections && !makeRoom('total', [...all.values()], maxConnections, group));
      if (refused) {
        socket.destroy();
        return;
      }
      const now = clock();
      const connection: Connection = { socket, group, openedAt: now, io: 0, activeAt: now };
      all.set(socket, connection);
      if (!peers) byGroup.set(group, (peers = new Set()));
      const ofGroup = peers;
      ofGroup.add(connection);
      socket.once('close', () => {
        all.delete(socket);
        ofGroup.delete(connection);
        if (ofGroup.size === 0) byGroup.delete(group);
      });
    });
  },
  { name: 'connection-limits', dependencies: ['errors', 'metrics'] },
);
