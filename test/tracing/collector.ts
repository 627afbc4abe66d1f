import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the collector received, as sent. */
export interface Received {
  method: string;
  path: string;
  contentType: string | undefined;
  body: string;
}

/** An attribute of OTLP/JSON: `{ key, value: { stringValue | intValue | boolValue | doubleValue } }`. */
interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}

/** A span as the tests read it: ids in hex, attributes as a plain record. */
export interface ExportedSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  status: { code?: number } | undefined;
  attributes: Record<string, string | number | boolean>;
  /** The resource's attributes (service.name…) of the batch the span came in. */
  resource: Record<string, string | number | boolean>;
}

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;

function attributes(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    // int64 values may come as strings in OTLP/JSON.
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue!;
  }
  return out;
}

/**
 * Decodes an OTLP/JSON trace export (ExportTraceServiceRequest); the exporter sends trace and
 * span ids as hex strings, as the OTLP/JSON encoding asks.
 */
export function decodeSpans(body: string): ExportedSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans: Array<{
      resource?: { attributes?: OtlpAttribute[] };
      scopeSpans: Array<{ spans: Array<{ name: string; kind: number; traceId: string; spanId: string; parentSpanId?: string; status?: { code?: number }; attributes?: OtlpAttribute[] }> }>;
    }>;
  };
  return request.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        name: s.name,
        kind: s.kind,
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId || undefined,
        status: s.status,
        attributes: attributes(s.attributes),
        resource: attributes(rs.resource?.attributes),
      })),
    ),
  );
}

export interface Collector {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string;
  received: Received[];
  close(): Promise<void>;
}

/** A stand-in for an OpenTelemetry collector: answers 200 to everything and keeps what it was sent. */
export async function startCollector(): Promise<Collector> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ method: req.method!, path: req.url!, contentType: req.headers['content-type'], body: Buffer.concat(chunks).toString() });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
