import net from 'node:net';

/** UP, DOWN, NOLB, MAINT, DRAIN or "no check": the first word of HAProxy's status ("UP 1/2" is UP, failing its checks). */
export type ServerState = 'UP' | 'DOWN' | 'NOLB' | 'MAINT' | 'DRAIN' | 'no check';

export interface ServerStats {
  name: string;
  state: ServerState;
  /** As HAProxy says it, e.g. "UP 1/2" while a server fails its checks but is not out yet. */
  status: string;
  /** Requests sent to it (stot: sessions). */
  requests: number;
  /** Requests retried after a failure on it (wretr), and sent elsewhere (wredis). */
  retries: number;
  redispatches: number;
  /** Connections to it that failed (econ), and responses that failed (eresp). */
  connectionErrors: number;
  responseErrors: number;
}

export interface BackendStats {
  servers: ServerStats[];
  /** The backend as a whole (its BACKEND line). */
  total: ServerStats;
}

/** Sends one command to HAProxy's runtime API socket and returns its whole answer. */
export function runtimeCommand(socket: string, command: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = net.createConnection(socket);
    let answer = '';
    conn.setTimeout(timeoutMs, () => conn.destroy(new Error(`${command}: no answer from ${socket} within ${timeoutMs} ms`)));
    conn.on('connect', () => conn.end(`${command}\n`));
    conn.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    conn.on('error', reject);
    conn.on('close', (hadError) => {
      if (!hadError) resolve(answer);
    });
  });
}

/** The lines of backend `backend` in `show stat` (CSV with a "# " header line). */
export async function backendStats(socket: string, backend: string): Promise<BackendStats> {
  const [header, ...rows] = (await runtimeCommand(socket, 'show stat')).split('\n').filter(Boolean);
  if (!header?.startsWith('# ')) throw new Error(`show stat: unexpected answer: ${header}`);
  const columns = header.slice(2).split(',');
  const lines = rows.map((row) => Object.fromEntries(row.split(',').map((value, i) => [columns[i], value])) as Record<string, string>);
  const toStats = (line: Record<string, string>): ServerStats => ({
    name: line.svname!,
    state: (line.status === 'no check' ? line.status : line.status!.split(' ')[0]) as ServerState,
    status: line.status!,
    requests: Number(line.stot || 0),
    retries: Number(line.wretr || 0),
    redispatches: Number(line.wredis || 0),
    connectionErrors: Number(line.econ || 0),
    responseErrors: Number(line.eresp || 0),
  });
  const ofBackend = lines.filter((l) => l.pxname === backend);
  const total = ofBackend.find((l) => l.svname === 'BACKEND');
  if (!total) throw new Error(`show stat: no backend ${backend}`);
  return { servers: ofBackend.filter((l) => l.svname !== 'BACKEND' && l.svname !== 'FRONTEND').map(toStats), total: toStats(total) };
}
