import net from 'node:net';
import { envSchema } from 'env-schema';
import type { FromSchema } from 'json-schema-to-ts';
import { parseRedisUrl } from './configParts/redisUrl.js';
import type { Quota } from './configParts/quota.js';
import { StartupError } from './startupError.js';

// `description` (for a pattern) and `examples` are what a message says is allowed (invalidVariables below).
const QUOTA = {
  type: 'string',
  pattern: '^[1-9][0-9]{0,8}/[1-9][0-9]{0,9}$',
  description: 'requests per minute and per day, as <per minute>/<per day> (whole numbers above 0)',
} as const;
const HTTP_URL = { type: 'string', pattern: '^https?://[^/?#]+(/[^?#]*)?$', description: 'an http:// or https:// URL' } as const;
/** Longest REDIS_PREFIX; most entries of WEBHOOK_RETRY_DELAYS_SECONDS (a retry each). */
const MAX_REDIS_PREFIX = 64;
const MAX_WEBHOOK_RETRIES = 30;

/** Every variable the service reads, validated once at start; `Env` and `Config` are derived from it. */
const schema = {
  type: 'object',
  additionalProperties: true,
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000 },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    DATABASE_URL: {
      type: 'string',
      pattern: '^postgres(ql)?://',
      description: 'a postgres:// URL (unset it for the embedded store)',
      examples: ['postgres://user:password@127.0.0.1:5432/animals'],
    },
    // transaction: a pooler such as PgBouncer in transaction mode is in front, so no session state is sent
    // at connect and the timeouts must come from `ALTER ROLE … SET` (checked at start).
    DATABASE_POOLING: { type: 'string', enum: ['none', 'transaction'], default: 'none' },
    DATA_DIR: { type: 'string', minLength: 1, default: './data' },
    DB_POOL_MAX: { type: 'integer', minimum: 1, maximum: 200, default: 10 },
    DB_POOL_WAIT_MS: { type: 'integer', minimum: 100, maximum: 60_000, default: 3000 },
    LOG_FORMAT: { type: 'string', enum: ['json', 'pretty'], default: 'json' },
    METRICS: { type: 'boolean', default: true },
    // Long enough to be a secret; compared in constant time.
    METRICS_TOKEN: { type: 'string', minLength: 16, examples: ['$(openssl rand -hex 24)'] },
    // The metrics listener, apart from the API's: loopback unless an operator opens it to a private network.
    METRICS_HOST: { type: 'string', minLength: 1, default: '127.0.0.1' },
    METRICS_PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 9464 },
    LOG_LEVEL: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
    },
    PUBLIC_BASE_URL: { ...HTTP_URL, description: 'the http(s):// origin clients use, optionally with a path', examples: ['https://api.example.com'] },
    // One Redis (redis://, rediss://) or a cluster's seed nodes (redis+cluster://host:port,host:port); checked by parseRedisUrl.
    REDIS_URL: {
      type: 'string',
      pattern: '^rediss?(\\+cluster)?://',
      description: 'a redis://, rediss:// or redis+cluster://host:port,host:port URL',
      examples: ['redis://127.0.0.1:6379'],
    },
    REDIS_PREFIX: {
      type: 'string',
      pattern: `^[A-Za-z0-9:_.-]{0,${MAX_REDIS_PREFIX}}$`,
      description: `up to ${MAX_REDIS_PREFIX} letters, digits and : _ . -`,
      default: 'animal-store:',
    },
    // Checked further by trustProxy() below: Fastify's proxy-addr throws on anything else.
    TRUST_PROXY: { type: 'string', minLength: 1, default: 'false' },
    SHUTDOWN_DRAIN_SECONDS: { type: 'number', minimum: 0, maximum: 300, default: 5 },
    SHUTDOWN_GRACE_SECONDS: { type: 'number', minimum: 0, maximum: 300, default: 10 },
    HEADERS_TIMEOUT_SECONDS: { type: 'number', minimum: 0.1, maximum: 300, default: 5 },
    REQUEST_TIMEOUT_SECONDS: { type: 'number', minimum: 0.1, maximum: 300, default: 10 },
    // Above the idle timeout of any load balancer in front (AWS ALB: 60 s); Fastify's default.
    KEEP_ALIVE_TIMEOUT_SECONDS: { type: 'number', minimum: 1, maximum: 3600, default: 72 },
    DB_STATEMENT_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 },
    DB_LOCK_TIMEOUT_MS: { type: 'integer', minimum: 100, maximum: 60_000, default: 3000 },
    REDIS_TIMEOUT_MS: { type: 'integer', minimum: 10, maximum: 5000, default: 150 },
    // Comma-separated origins (scheme://host[:port]) allowed to call the API from a browser.
    CORS_ORIGINS: {
      type: 'string',
      pattern: '^https?://[^/,\\s]+(,https?://[^/,\\s]+)*$',
      description: 'comma-separated origins (scheme://host[:port], no path)',
      examples: ['https://app.example.com,https://admin.example.com'],
    },
    // On in the test suite; costs throughput, so off by default.
    RESPONSE_VALIDATION: { type: 'boolean', default: false },
    // OpenTelemetry's own variables, with their standard meaning: traces go to <endpoint>/v1/traces,
    // or exactly to the traces endpoint when that is set. Either one turns tracing on.
    OTEL_EXPORTER_OTLP_ENDPOINT: { ...HTTP_URL, examples: ['http://127.0.0.1:4318'] },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { ...HTTP_URL, examples: ['http://127.0.0.1:4318/v1/traces'] },
    OTEL_SERVICE_NAME: { type: 'string', minLength: 1, default: 'animal-store' },
    // Per-minute/per-day quotas, as "<per minute>/<per day>".
    RATE_LIMIT_FREE: { ...QUOTA, default: '60/1000' },
    RATE_LIMIT_PRO: { ...QUOTA, default: '300/10000' },
    RATE_LIMIT_BUSINESS: { ...QUOTA, default: '1000/100000' },
    RATE_LIMIT_ANONYMOUS: { ...QUOTA, default: '60/1000' },
    // Placed orders an account may hold at once, per plan (enterprise: unless the account has its own).
    OPEN_ORDERS_FREE: { type: 'integer', minimum: 1, default: 3 },
    OPEN_ORDERS_PRO: { type: 'integer', minimum: 1, default: 25 },
    OPEN_ORDERS_BUSINESS: { type: 'integer', minimum: 1, default: 250 },
    OPEN_ORDERS_ENTERPRISE: { type: 'integer', minimum: 1, default: 250 },
    // How long a placed order holds its animal before it expires (three days).
    ORDER_HOLD_SECONDS: { type: 'integer', minimum: 1, default: 259200 },
    RATE_LIMIT_BAN_AFTER: { type: 'integer', minimum: 0, default: 10 },
    RATE_LIMIT_BAN_SECONDS: { type: 'integer', minimum: 1, default: 900 },
    // Refusals count toward a ban only this long after the first refusal of the minute.
    RATE_LIMIT_BAN_GRACE_SECONDS: { type: 'number', minimum: 0, maximum: 60, default: 2 },
    // Most requests of one key reserved per Redis round trip (1: every request goes to Redis).
    RATE_LIMIT_REDIS_BATCH: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
    // Webhooks (docs/WEBHOOKS.md). The key that encrypts endpoint secrets at rest: base64 of 32 bytes.
    WEBHOOK_SECRET_KEY: {
      type: 'string',
      pattern: '^[A-Za-z0-9+/]{43}=$',
      description: 'the base64 of 32 random bytes',
      examples: ['$(openssl rand -base64 32)'],
    },
    WEBHOOK_TIMEOUT_SECONDS: { type: 'number', minimum: 0.1, maximum: 60, default: 10 },
    // Seconds before each retry after a failed attempt (each with ±20% jitter); one retry per entry.
    WEBHOOK_RETRY_DELAYS_SECONDS: {
      type: 'string',
      pattern: `^[0-9]{1,6}(\\.[0-9]+)?(,[0-9]{1,6}(\\.[0-9]+)?){0,${MAX_WEBHOOK_RETRIES - 1}}$`,
      description: `comma-separated seconds, at most ${MAX_WEBHOOK_RETRIES} of them`,
      default: '5,300,1800,7200,18000,36000,50400,72000,86400',
    },
    WEBHOOK_DISABLE_AFTER_SECONDS: { type: 'number', minimum: 0, default: 432_000 },
    // Development and tests only: lets endpoints resolve to loopback and private addresses.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: { type: 'boolean', default: false },
    // Requests one instance has out at once, and how often idle workers look for due ones. A worker holds no
    // database connection (deliveries share their reads and writes: webhooks/delivery.ts), only its request.
    WEBHOOK_CONCURRENCY: { type: 'integer', minimum: 0, maximum: 200, default: 64 },
    // One look per instance (src/jobs/fairWorkers.ts), not one per worker: 0.1 s is 10 fetches a second when idle.
    WEBHOOK_POLL_SECONDS: { type: 'number', minimum: 0.05, maximum: 60, default: 0.1 },
    // At most this many of an instance's for one account (unset: all of them), and in flight to one endpoint across every instance (unset: half of WEBHOOK_CONCURRENCY).
    WEBHOOK_ACCOUNT_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 200 },
    WEBHOOK_ENDPOINT_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 200 },
    // The circuit breaker: this many timeouts in a row pause an endpoint for the pause, doubled with each timeout after (at most an hour).
    WEBHOOK_BREAKER_TIMEOUTS: { type: 'integer', minimum: 1, maximum: 100, default: 3 },
    WEBHOOK_BREAKER_PAUSE_SECONDS: { type: 'number', minimum: 1, maximum: 3600, default: 60 },
  },
} as const;

/** Every variable the service reads (tools that start it pass only these on purpose). */
export const CONFIG_VARIABLES = Object.keys(schema.properties);

/** The validated variables, typed from the schema (defaults make a property present). */
type Env = FromSchema<typeof schema>;

function quota(text: string): Quota {
  const [perMinute, perDay] = text.split('/').map(Number) as [number, number];
  return { perMinute, perDay };
}

/** Names proxy-addr (Fastify's trustProxy) knows besides addresses. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, an address/prefix or IPv4 address/netmask, or a named range: what proxy-addr accepts. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGES.has(entry)) return true;
  const [address = '', range, ...rest] = entry.split('/');
  const family = net.isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^[0-9]{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && net.isIPv4(range);
}

function trustProxy(text: string): boolean | string {
  if (text === 'true' || text === 'false') return text === 'true';
  const entries = text.split(',').map((entry) => entry.trim());
  const wrong = entries.find((entry) => !isProxyAddress(entry));
  if (wrong !== undefined) {
    throw new StartupError(
      `TRUST_PROXY must be true, false, or a comma-separated list of proxy addresses or CIDR ranges, ` +
        `for example TRUST_PROXY=10.0.0.0/8,127.0.0.1; "${wrong}" is none of these.`,
    );
  }
  return entries.join(',');
}

interface VariableSchema {
  type?: string;
  description?: string;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  examples?: readonly string[];
  default?: unknown;
}

/** What a variable allows, in words, from its schema: so that the message and the check never disagree. */
function allowedValues(v: VariableSchema): string {
  if (v.description) return v.description;
  if (v.enum) return `one of ${v.enum.join(', ')}`;
  if (v.type === 'boolean') return 'true or false';
  if (v.type === 'integer' || v.type === 'number') {
    const what = v.type === 'integer' ? 'a whole number' : 'a number';
    if (v.minimum !== undefined && v.maximum !== undefined) return `${what} from ${v.minimum} to ${v.maximum}`;
    if (v.minimum !== undefined) return `${what} of at least ${v.minimum}`;
    return what;
  }
  return v.minLength ? `at least ${v.minLength} characters` : 'text';
}

/** One sentence per invalid variable (never its value: some are secrets), from env-schema's ajv errors. */
function invalidVariables(err: Error & { errors?: Array<{ instancePath: string }> }): StartupError {
  const properties: Record<string, VariableSchema> = schema.properties;
  const names = [...new Set((err.errors ?? []).map((e) => e.instancePath.replace(/^\//, '')))].filter((name) => name in properties);
  if (names.length === 0) return new StartupError(err.message);
  return new StartupError(
    names
      .map((name) => {
        const v = properties[name]!;
        const example = v.examples?.[0] ?? v.default ?? v.minimum;
        return `${name} must be ${allowedValues(v)}${example === undefined ? '' : `, for example ${name}=${String(example)}`}.`;
      })
      .join('\n'),
  );
}

/** The OTLP traces URL by the spec's rule: the signal's own endpoint as is, else the base endpoint plus `v1/traces`. */
function tracesEndpoint(e: Env): string | undefined {
  if (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base = e.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base && `${base}${base.endsWith('/') ? '' : '/'}v1/traces`;
}

/** Reads and validates the configuration; throws a StartupError naming the bad variable and what it allows. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env) {
  // Empty variables count as unset, so `DATABASE_URL= npm start` means "embedded".
  const data = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  // env: false — only the given variables count, so callers (and tests) decide what the service sees.
  let e: Env;
  try {
    e = envSchema<Env>({ schema, data, dotenv: false, env: false });
  } catch (err) {
    throw invalidVariables(err as Error);
  }
  // The embedded store is for development; the production image (NODE_ENV=production) needs a real database.
  if (env.NODE_ENV === 'production' && !e.DATABASE_URL) {
    throw new StartupError('NODE_ENV=production needs DATABASE_URL (a postgres:// URL): the embedded store is for development only.');
  }
  if (e.REDIS_URL) {
    try {
      parseRedisUrl(e.REDIS_URL);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
  }
  if (e.DB_LOCK_TIMEOUT_MS >= e.DB_STATEMENT_TIMEOUT_MS) {
    throw new StartupError('DB_LOCK_TIMEOUT_MS must be below DB_STATEMENT_TIMEOUT_MS.');
  }
  if (e.HEADERS_TIMEOUT_SECONDS > e.REQUEST_TIMEOUT_SECONDS) {
    throw new StartupError('HEADERS_TIMEOUT_SECONDS must not exceed REQUEST_TIMEOUT_SECONDS.');
  }
  const trusted = trustProxy(e.TRUST_PROXY);
  const traces = tracesEndpoint(e);
  const hostForUrl = e.HOST === '0.0.0.0' || e.HOST === '::' ? '127.0.0.1' : e.HOST;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    databasePooling: e.DATABASE_POOLING,
    dataDir: e.DATA_DIR,
    dbPoolMax: e.DB_POOL_MAX,
    dbPoolWaitMs: e.DB_POOL_WAIT_MS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    metrics: { enabled: e.METRICS, token: e.METRICS_TOKEN, host: e.METRICS_HOST, port: e.METRICS_PORT },
    publicBaseUrl: (e.PUBLIC_BASE_URL ?? `http://${hostForUrl}:${e.PORT}`).replace(/\/+$/, ''),
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    trustProxy: trusted,
    shutdown: { drainSeconds: e.SHUTDOWN_DRAIN_SECONDS, graceSeconds: e.SHUTDOWN_GRACE_SECONDS },
    http: {
      headersTimeoutMs: e.HEADERS_TIMEOUT_SECONDS * 1000,
      requestTimeoutMs: e.REQUEST_TIMEOUT_SECONDS * 1000,
      keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_SECONDS * 1000,
    },
    db: { statementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS, lockTimeoutMs: e.DB_LOCK_TIMEOUT_MS },
    redisTimeoutMs: e.REDIS_TIMEOUT_MS,
    responseValidation: e.RESPONSE_VALIDATION,
    tracing: traces ? { endpoint: traces, serviceName: e.OTEL_SERVICE_NAME } : undefined,
    corsOrigins: e.CORS_ORIGINS?.split(',') ?? [],
    orderHoldSeconds: e.ORDER_HOLD_SECONDS,
    openOrders: { free: e.OPEN_ORDERS_FREE, pro: e.OPEN_ORDERS_PRO, business: e.OPEN_ORDERS_BUSINESS, enterprise: e.OPEN_ORDERS_ENTERPRISE },
    rateLimits: {
      plans: { free: quota(e.RATE_LIMIT_FREE), pro: quota(e.RATE_LIMIT_PRO), business: quota(e.RATE_LIMIT_BUSINESS) },
      anonymous: quota(e.RATE_LIMIT_ANONYMOUS),
      ban: { after: e.RATE_LIMIT_BAN_AFTER, seconds: e.RATE_LIMIT_BAN_SECONDS, graceMs: e.RATE_LIMIT_BAN_GRACE_SECONDS * 1000 },
      redisBatch: e.RATE_LIMIT_REDIS_BATCH,
    },
    webhooks: {
      secretKey: e.WEBHOOK_SECRET_KEY,
      timeoutMs: e.WEBHOOK_TIMEOUT_SECONDS * 1000,
      retryDelaysSeconds: e.WEBHOOK_RETRY_DELAYS_SECONDS.split(',').map(Number),
      disableAfterSeconds: e.WEBHOOK_DISABLE_AFTER_SECONDS,
      allowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      pollSeconds: e.WEBHOOK_POLL_SECONDS,
      ...webhookShares(e.WEBHOOK_CONCURRENCY, e.WEBHOOK_ACCOUNT_CONCURRENCY, e.WEBHOOK_ENDPOINT_CONCURRENCY),
      breaker: { timeouts: e.WEBHOOK_BREAKER_TIMEOUTS, pauseSeconds: e.WEBHOOK_BREAKER_PAUSE_SECONDS },
    },
  };
}

/**
 * The bounds of delivery (docs/WEBHOOKS.md, "Fair delivery"): an account may hold every worker of an
 * instance unless WEBHOOK_ACCOUNT_CONCURRENCY says less (shares among accounts are max-min fair by
 * worker-time, so a cap is not what keeps them fair); an endpoint at most half of WEBHOOK_CONCURRENCY
 * (32 of 64; docs/WEBHOOKS.md says why half) in flight across the fleet, and never more than its account; at least a sixteenth of the
 * workers (4 of 64) is kept for accounts running none (jobs/fairShare.ts).
 */
function webhookShares(concurrency: number, account: number | undefined, endpoint: number | undefined) {
  const all = Math.max(1, concurrency);
  const perAccount = Math.min(all, account ?? all);
  return { perAccount, perEndpoint: Math.min(perAccount, endpoint ?? Math.max(1, Math.floor(all / 2))), reserve: Math.floor(all / 16) };
}

/** Everything the service reads from the environment, validated once at start (see docs/CONFIGURATION.md). */
export type Config = ReturnType<typeof loadConfig>;
