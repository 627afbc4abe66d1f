import { hostname } from 'node:os';
import pino, { type Logger } from 'pino';

/** What the request line says about one answered request (logging/requestLog.ts). */
export interface RequestLineFields {
  reqId: string;
  op: string | undefined;
  method: string;
  url: string;
  status: number;
  ms: number;
  ip: string;
  keyId: number | undefined;
  plan: string | undefined;
  rateLimit: string | undefined;
}

const field = (name: string, value: string | number | undefined) => (value === undefined ? '' : `,"${name}":${typeof value === 'number' ? value : `"${value}"`}`);

/**
 * Writes the info-level request line straight to the logger's destination, the same JSON
 * pino would write for `logger.info(fields, 'request')` (level, time, pid, hostname, the
 * fields, msg), in one template: pino's general serializer allocated 2.6 KB per line, this
 * 1.0 KB (measured with V8's GC records over 200,000 lines). Lines at other levels and of other
 * kinds go through pino. Only for a logger with pino's default level numbers, time and base fields.
 * Only the URL and the address (from X-Forwarded-For behind a proxy) can hold characters JSON
 * must escape: the request id is a UUID or matched http/requestId.ts's pattern, the method is
 * an HTTP token, the rest come from this service.
 */
export function requestLineWriter(logger: Logger): (fields: RequestLineFields) => void {
  const stream = (logger as unknown as Record<symbol, { write(line: string): unknown }>)[pino.symbols.streamSym]!;
  const head = `{"level":${pino.levels.values.info},"time":`;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  return (f) => {
    stream.write(
      `${head}${Date.now()}${base},"reqId":"${f.reqId}"${field('op', f.op)},"method":"${f.method}","url":${JSON.stringify(f.url)}` +
        `,"status":${f.status},"ms":${f.ms},"ip":${JSON.stringify(f.ip)}${field('keyId', f.keyId)}${field('plan', f.plan)}${field('rateLimit', f.rateLimit)},"msg":"request"}\n`,
    );
  };
}
