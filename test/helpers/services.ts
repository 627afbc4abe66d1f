import { inject } from 'vitest';

/*
 * What the run found in globalSetup, for `describe.skipIf(...)` in the tests that need
 * more than Node: globalSetup prints what it skips and how to enable it, and fails
 * instead when TEST_REQUIRE_SERVICES=1.
 */

/** No Redis answered at TEST_REDIS_URL or 127.0.0.1:6379. */
export const withoutRedis = () => !inject('services').redis.up;
/** No redis-server binary on PATH, for tests that start (and kill) a Redis of their own. */
export const withoutRedisServerBinary = () => !inject('services').redisServerBinary;
/** No redis-server 7+ or redis-cli, for tests that start a Redis Cluster of their own. */
export const withoutRedisCluster = () => !inject('services').redisClusterTools;
/** No pgbouncer binary, for tests that start a PgBouncer of their own (they need a Postgres server too). */
export const withoutPgBouncer = () => !inject('services').pgbouncerBinary;
/** No haproxy binary, for tests that put one of their own in front of several instances. */
export const withoutHAProxy = () => !inject('services').haproxyBinary;

/** The admin URL of the run's Postgres server (TEST_POSTGRES_URL, DATABASE_URL, or the run's embedded one). */
export const postgresServerUrl = () => inject('services').postgres.url;
/** The Redis of the test run, shared by every test file. */
export const redisUrl = () => inject('services').redis.url;
