import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { QueryTracer } from './plugin.js';

/**
 * A client span per SQL statement, child of the span of the request that sent it (found in
 * the async context as the statement is sent), with the stable semantic-convention attributes:
 * the SQL text as written (placeholders, never the values), the database, the server. Named by
 * the statement's first keyword (SELECT, INSERT, BEGIN): low-cardinality, unlike the text.
 * Statements outside a request (start-up, the expiry job) are not traced: each would be a trace
 * of its own.
 *
 * Hand-built: @opentelemetry/instrumentation-pg 0.76 (tried: it works from the entry's first import, no
 * loader flag) wraps each statement again beside db/statements.ts's wrapper, which the watchdog and
 * the metrics need anyway (+11 µs per traced statement), and puts the error message, which can quote
 * values, in the span status.
 */
export function querySpans(tracer: Tracer): QueryTracer {
  return (sql, connection) => {
    const parent = context.active();
    if (!trace.getSpan(parent)) return undefined;
    const span = tracer.startSpan(
      /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase() ?? 'postgresql',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': 'postgresql',
          // The attribute's older name, which many backends still read instead.
          'db.system': 'postgresql',
          'db.query.text': sql,
          ...(connection.database && { 'db.namespace': connection.database }),
          'server.address': connection.host,
          'server.port': connection.port,
        },
      },
      parent,
    );
    return (_ms, failed, error) => {
      if (failed) {
        // Postgres's SQLSTATE (23505, 57014…), never the message, which can quote values.
        const code = (error as { code?: unknown } | undefined)?.code;
        const sqlState = typeof code === 'string' ? code : undefined;
        if (sqlState) span.setAttribute('db.response.status_code', sqlState);
        span.setAttribute('error.type', sqlState ?? (error instanceof Error ? error.name : 'Error'));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
  };
}
