// The webhook receiver of npm run sdk:check: each language's endpoint is POST /hook/<language>;
// a driver reads what its endpoint received with GET /received/<language>/<webhook-id> and checks
// the signature itself, in its own language.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HookRequest {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
}

export interface HookReceiver {
  /** http://127.0.0.1:<port>, no trailing slash. */
  baseUrl: string;
  close(): Promise<void>;
}

export async function startHookReceiver(): Promise<HookReceiver> {
  const received = new Map<string, HookRequest>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hook = req.method === 'POST' ? /^\/hook\/([a-z]+)$/.exec(req.url ?? '') : null;
      const lookup = req.method === 'GET' ? /^\/received\/([a-z]+)\/([^/]+)$/.exec(req.url ?? '') : null;
      if (hook) {
        const header = (name: string) => String(req.headers[name] ?? '');
        const id = header('webhook-id');
        received.set(`${hook[1]}/${id}`, { id, timestamp: header('webhook-timestamp'), signature: header('webhook-signature'), body: Buffer.concat(chunks).toString('utf8') });
        res.statusCode = 204;
        return res.end();
      }
      const found = lookup ? received.get(`${lookup[1]}/${decodeURIComponent(lookup[2]!)}`) : undefined;
      res.statusCode = found ? 200 : 404;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(found ?? { error: 'nothing received' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
