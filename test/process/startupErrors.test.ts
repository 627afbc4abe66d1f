import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { anotherServer } from '../../src/db/embeddedOwner.js';
import { explainDataDirFailure, explainPostgresFailure } from '../../src/db/openErrors.js';
import { explainListenFailure } from '../../src/process/startup.js';
import { StartupError } from '../../src/startupError.js';

/** What a failing system call or Postgres gives: an Error with a code (pg errors carry the SQLSTATE). */
const failure = (code: string, message = code) => Object.assign(new Error(message), { code });

/** One or two sentences: no stack, no regular expression, no line of source. */
function expectSentences(message: string) {
  expect(message).not.toMatch(/\n\s+at /);
  expect(message).not.toMatch(/\^|\$"|\[0-9\]|must match pattern/);
  expect(message.split(/(?<=\.)\s+(?=[A-Z])/).length).toBeLessThanOrEqual(3);
}

describe('a failure to reach Postgres at start', () => {
  const url = 'postgres://app:s3cret@db.internal:6432/animals';

  it.each([
    ['ECONNREFUSED', /Postgres at db\.internal:6432 \(DATABASE_URL\).*Start Postgres/],
    ['ENOTFOUND', /DATABASE_URL names the host "db\.internal", which this machine cannot resolve/],
    ['EAI_AGAIN', /DATABASE_URL names the host "db\.internal"/],
    ['3D000', /The database "animals" does not exist on the Postgres server at db\.internal:6432 \(DATABASE_URL\)\. Create it \(createdb -h db\.internal -U app animals\)/],
    ['28P01', /refused the user "app" of DATABASE_URL/],
  ])('%s is told in words, naming DATABASE_URL and where it points, never the password', (code, words) => {
    const explained = explainPostgresFailure(failure(code), url)!;
    expect(explained).toBeInstanceOf(StartupError);
    expect(explained.message).toMatch(words);
    expect(explained.message).not.toContain('s3cret');
    expectSentences(explained.message);
  });

  it('finds the code inside the AggregateError of a name with several addresses (localhost: ::1 and 127.0.0.1)', () => {
    const both = Object.assign(new AggregateError([failure('ECONNREFUSED'), failure('ECONNREFUSED')], ''), { code: undefined });
    expect(explainPostgresFailure(both, 'postgres://localhost/x')?.message).toMatch(/^Cannot connect to Postgres at localhost:5432 \(DATABASE_URL\)/);
  });

  it('tells a PgBouncer refusing the timeouts from a Postgres too slow to answer', () => {
    const refused = explainPostgresFailure(failure('08P01', 'unsupported startup parameter: statement_timeout'), url)!;
    expect(refused.message).toMatch(/^The server at db\.internal:6432 \(DATABASE_URL\) refused a setting sent when connecting \(unsupported startup parameter: statement_timeout\), as PgBouncer does\. Behind PgBouncer set DATABASE_POOLING=transaction/);
    expect(explainPostgresFailure(new Error('timeout expired'), url)?.message).toMatch(/^Postgres at db\.internal:6432 \(DATABASE_URL\) did not answer in time\./);
  });

  it('leaves other failures (a bug, a failed migration) alone', () => {
    expect(explainPostgresFailure(failure('42P01', 'relation "pets" does not exist'), url)).toBeUndefined();
    expect(explainPostgresFailure(new TypeError('x is undefined'), url)).toBeUndefined();
  });
});

describe('a DATA_DIR the embedded store cannot use', () => {
  it.each([
    ['EACCES', 'this user may not write there'],
    ['EROFS', 'it is on a read-only file system'],
    ['ENOTDIR', 'a part of that path is a file, not a folder'],
    ['ENOSPC', 'the disk is full'],
  ])('%s names DATA_DIR, the folder and what to do', (code, reason) => {
    const explained = explainDataDirFailure(failure(code), '/srv/data')!;
    expect(explained.message).toBe(
      `DATA_DIR (/srv/data) cannot hold the embedded database: ${reason}. Set DATA_DIR to a folder this user can write, or set DATABASE_URL to use Postgres.`,
    );
  });

  it('leaves other failures alone', () => {
    expect(explainDataDirFailure(failure('EIO'), '/srv/data')).toBeUndefined();
  });
});

describe('a second server on one embedded store', () => {
  it.each([
    [{ pid: 1234, port: 3000 }, 'Another Animal Store server (pid 1234, port 3000) is already running'],
    [{ pid: 1234 }, 'Another Animal Store server (pid 1234) is already running'],
    ['alive' as const, 'Another Animal Store server is already running'],
  ])('names the first (%j: its pid and port, what it told), the DATA_DIR, and what to do', (owner, start) => {
    const message = anotherServer(owner, './data');
    expect(message).toBe(`${start} on the embedded PostgreSQL in ./data; stop it, or start this one with another DATA_DIR (or a DATABASE_URL).`);
    expectSentences(message);
  });
});

describe('a failure to listen', () => {
  it.each([
    ['EADDRINUSE', /^PORT 3000 on 127\.0\.0\.1 is already in use.*set PORT to a free port/],
    ['EACCES', /^PORT 3000 on 127\.0\.0\.1 needs privileges/],
    ['EADDRNOTAVAIL', /^HOST 127\.0\.0\.1 is not an address of this machine/],
  ])('%s names PORT or HOST', (code, words) => {
    const explained = explainListenFailure(failure(code), { host: '127.0.0.1', port: 3000 })!;
    expect(explained.message).toMatch(words);
    expectSentences(explained.message);
  });

  it.each([
    [{ host: '127.0.0.1', port: 3000 }, 'The server started from this checkout, pid 4242, holds PORT 3000 on 127.0.0.1. Stop it (Ctrl-C in its terminal, or kill 4242), or set PORT to a free port (for example PORT=3001).'],
    [
      { host: '127.0.0.1', port: 9464, variables: { host: 'METRICS_HOST', port: 'METRICS_PORT' } },
      'The server started from this checkout, pid 4242, holds METRICS_PORT 9464 on 127.0.0.1. Stop it (Ctrl-C in its terminal, or kill 4242), or set METRICS_PORT to a free port (for example METRICS_PORT=9465).',
    ],
  ])('a port this checkout\'s own server holds (%j) names it and its pid', (address, message) => {
    expect(explainListenFailure(failure('EADDRINUSE'), { ...address, heldBy: 4242 })!.message).toBe(message);
    // Any other failure is told as before, whoever holds the port.
    expect(explainListenFailure(failure('EACCES'), { ...address, heldBy: 4242 })!.message).toMatch(/needs privileges/);
  });
});

describe('an invalid variable', () => {
  it.each([
    [{ PORT: '70000' }, 'PORT must be a whole number from 0 to 65535, for example PORT=3000.'],
    [{ RATE_LIMIT_FREE: '60' }, 'RATE_LIMIT_FREE must be requests per minute and per day, as <per minute>/<per day> (whole numbers above 0), for example RATE_LIMIT_FREE=60/1000.'],
    [{ REDIS_PREFIX: 'a b' }, 'REDIS_PREFIX must be up to 64 letters, digits and : _ . -, for example REDIS_PREFIX=animal-store:.'],
    [{ CORS_ORIGINS: 'app.example' }, 'CORS_ORIGINS must be comma-separated origins (scheme://host[:port], no path), for example CORS_ORIGINS=https://app.example.com,https://admin.example.com.'],
    [{ METRICS: 'yes' }, 'METRICS must be true or false, for example METRICS=true.'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, for example LOG_LEVEL=info.'],
    [{ DATABASE_URL: 'mysql://db/animals' }, 'DATABASE_URL must be a postgres:// URL (unset it for the embedded store), for example DATABASE_URL=postgres://user:password@127.0.0.1:5432/animals.'],
    [{ PUBLIC_BASE_URL: 'api.example.com' }, 'PUBLIC_BASE_URL must be the http(s):// origin clients use, optionally with a path, for example PUBLIC_BASE_URL=https://api.example.com.'],
  ])('%j is told what is allowed, with an example, not a regular expression', (env, message) => {
    expect(() => loadConfig(env)).toThrow(new StartupError(message));
  });

  it('lists every invalid variable, one sentence each, and never echoes a value (some are secrets)', () => {
    const err = (() => {
      try {
        loadConfig({ METRICS_TOKEN: 'short-secret', PORT: 'eighty' });
      } catch (e) {
        return e as Error;
      }
    })()!;
    expect(err.message.split('\n').sort()).toEqual([
      'METRICS_TOKEN must be at least 16 characters, for example METRICS_TOKEN=$(openssl rand -hex 24).',
      'PORT must be a whole number from 0 to 65535, for example PORT=3000.',
    ]);
    expect(err.message).not.toContain('short-secret');
  });

  it.each(['yes', '10.0.0.0/33', '10.0.0.0/8,proxy.internal', '::1/129'])('TRUST_PROXY=%s is refused at start, naming the entry, not deep in Fastify', (value) => {
    expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/^TRUST_PROXY must be true, false, or a comma-separated list of proxy addresses or CIDR ranges, for example TRUST_PROXY=10\.0\.0\.0\/8,127\.0\.0\.1; ".+" is none of these\.$/);
  });

  it.each(['true', 'false', '10.0.0.0/8', '10.0.0.0/8, 127.0.0.1', 'loopback,uniquelocal', '::1', '2001:db8::/32', '10.0.0.0/255.0.0.0'])('TRUST_PROXY=%s is accepted', (value) => {
    expect(() => loadConfig({ TRUST_PROXY: value })).not.toThrow();
  });
});
