import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { querySpans } from '../../src/tracing/querySpans.js';

describe('the span of a SQL statement', () => {
  const exporter = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test');
  const traceQuery = querySpans(tracer);
  const connection = { host: 'db.internal', port: 6432, database: 'animals' } as pg.Client;

  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });

  it('is not started outside a request (no active span)', () => {
    expect(traceQuery('SELECT 1', connection)).toBeUndefined();
  });

  it('records a failure by its SQLSTATE, never its message', () => {
    const request = tracer.startSpan('request');
    const finished = context.with(trace.setSpan(context.active(), request), () => traceQuery('  insert INTO pets (name) VALUES ($1)', connection));
    const err = Object.assign(new Error('duplicate key value violates unique constraint "pets_name_key"'), { code: '23505' });
    finished!(1.5, true, err);
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).toBe('INSERT');
    expect(span!.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(span!.attributes).toEqual({
      'db.system.name': 'postgresql',
      'db.system': 'postgresql',
      'db.query.text': '  insert INTO pets (name) VALUES ($1)',
      'db.namespace': 'animals',
      'server.address': 'db.internal',
      'server.port': 6432,
      'db.response.status_code': '23505',
      'error.type': '23505',
    });
    expect(span!.status).toEqual({ code: SpanStatusCode.ERROR });
    expect(JSON.stringify(span!.events)).not.toContain('duplicate');
  });
});
