import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has working defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      dataDir: './data',
      publicBaseUrl: 'http://127.0.0.1:3000',
      redisUrl: undefined,
      trustProxy: false,
    });
    expect(c.rateLimits.plans).toEqual({
      free: { perMinute: 60, perDay: 1000 },
      pro: { perMinute: 300, perDay: 10000 },
      business: { perMinute: 1000, perDay: 100000 },
    });
    expect(c.rateLimits.ban).toEqual({ after: 10, seconds: 900, graceMs: 2000 });
    expect(c.rateLimits.redisBatch).toBe(100);
    expect(c.shutdown).toEqual({ drainSeconds: 5, graceSeconds: 10 });
    expect(c.http).toEqual({ headersTimeoutMs: 5000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000 });
    expect(c.db).toEqual({ statementTimeoutMs: 5000, lockTimeoutMs: 3000 });
    expect(c.redisTimeoutMs).toBe(150);
  });

  it('reads overrides and strips a trailing slash from the public URL', () => {
    const c = loadConfig({ PORT: '8080', PUBLIC_BASE_URL: 'https://api.example.org/', RATE_LIMIT_PRO: '10/20', TRUST_PROXY: '10.0.0.0/8' });
    expect(c.port).toBe(8080);
    expect(c.publicBaseUrl).toBe('https://api.example.org');
    expect(c.rateLimits.plans.pro).toEqual({ perMinute: 10, perDay: 20 });
    expect(c.trustProxy).toBe('10.0.0.0/8');
  });

  it('turns tracing on with an OTLP endpoint, by OpenTelemetry\'s rules', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({ endpoint: 'http://collector:4318/v1/traces', serviceName: 'animal-store' });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/otlp/' }).tracing?.endpoint).toBe('http://collector:4318/otlp/v1/traces');
    // The traces endpoint is taken as it is, and wins.
    const c = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/traces', OTEL_SERVICE_NAME: 'pets-eu' });
    expect(c.tracing).toEqual({ endpoint: 'https://b/traces', serviceName: 'pets-eu' });
  });

  it('with NODE_ENV=production, starts only on DATABASE_URL (the embedded store is for development)', () => {
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x' }).databaseUrl).toBe('postgres://db/x');
  });

  it('holds REDIS_PREFIX and WEBHOOK_RETRY_DELAYS_SECONDS to the bounds their messages state', () => {
    expect(loadConfig({ REDIS_PREFIX: 'p'.repeat(64) }).redisPrefix).toBe('p'.repeat(64));
    expect(() => loadConfig({ REDIS_PREFIX: 'p'.repeat(65) })).toThrow('REDIS_PREFIX must be up to 64 letters, digits and : _ . -,');
    expect(loadConfig({ WEBHOOK_RETRY_DELAYS_SECONDS: Array(30).fill('1').join(',') }).webhooks.retryDelaysSeconds).toHaveLength(30);
    // An endpoint's bound defaults to half of WEBHOOK_CONCURRENCY (docs/WEBHOOKS.md says why), never more than an account's.
    expect(loadConfig({}).webhooks.perEndpoint).toBe(32);
    expect(loadConfig({ WEBHOOK_CONCURRENCY: '10' }).webhooks.perEndpoint).toBe(5);
    expect(loadConfig({ WEBHOOK_ACCOUNT_CONCURRENCY: '8' }).webhooks.perEndpoint).toBe(8);
    expect(loadConfig({ WEBHOOK_ENDPOINT_CONCURRENCY: '16' }).webhooks.perEndpoint).toBe(16);
    expect(() => loadConfig({ WEBHOOK_RETRY_DELAYS_SECONDS: Array(31).fill('1').join(',') })).toThrow('WEBHOOK_RETRY_DELAYS_SECONDS must be comma-separated seconds, at most 30 of them,');
    expect(() => loadConfig({ METRICS_TOKEN: 'x'.repeat(15) })).toThrow('METRICS_TOKEN must be at least 16 characters,');
    expect(loadConfig({ METRICS_TOKEN: 'x'.repeat(16) }).metrics.token).toBe('x'.repeat(16));
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, /PUBLIC_BASE_URL/],
    [{ RATE_LIMIT_FREE: '60' }, /RATE_LIMIT_FREE/],
    [{ RATE_LIMIT_REDIS_BATCH: '0' }, /RATE_LIMIT_REDIS_BATCH/],
    [{ NODE_ENV: 'production' }, /^NODE_ENV=production needs DATABASE_URL \(a postgres:\/\/ URL\): the embedded store is for development only\.$/],
    [{ DB_LOCK_TIMEOUT_MS: '5000' }, /DB_LOCK_TIMEOUT_MS must be below DB_STATEMENT_TIMEOUT_MS/],
    [{ HEADERS_TIMEOUT_SECONDS: '20' }, /HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS/],
    [{ SHUTDOWN_DRAIN_SECONDS: '-1' }, /SHUTDOWN_DRAIN_SECONDS/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT/],
  ])('rejects %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env as NodeJS.ProcessEnv)).toThrow(message);
  });
});
