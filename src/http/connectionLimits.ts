import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export interface ConnectionLimits {
  maxConnections: number;
  /** 0: no cap per address. */
  maxConnectionsPerAddress: number;
}

/**
 * Caps open connections in total and per peer address, so one client holding many
 * (slow or idle) connections cannot take the file descriptors and sockets everyone else
 * needs. A connection over a cap is closed at once, before anything is read from it.
 */
export default fp(
  async function connectionLimitsPlugin(app: FastifyInstance, limits: ConnectionLimits) {
    app.server.maxConnections = limits.maxConnections;
    if (limits.maxConnectionsPerAddress === 0) return;
    const open = new Map<string, number>();
    app.server.on('connection', (socket) => {
      const address = socket.remoteAddress ?? '';
      const count = (open.get(address) ?? 0) + 1;
      if (count > limits.maxConnectionsPerAddress) {
        socket.destroy();
        return;
      }
      open.set(address, count);
      socket.once('close', () => {
        const left = (open.get(address) ?? 1) - 1;
        if (left === 0) open.delete(address);
        else open.set(address, left);
      });
    });
  },
  { name: 'connection-limits' },
);
