import { StartupError } from '../startupError.js';

type Failure = Error & { code?: string; errors?: Array<Error & { code?: string }> };

/** The system or SQLSTATE code of a failure; net.connect's AggregateError (one error per address) carries it too. */
const codeOf = (err: Failure) => err.code ?? err.errors?.find((e) => e.code)?.code;

/**
 * The first connection to Postgres failed: one or two sentences naming DATABASE_URL, where it
 * points (never the password), and what to do, for the failures a newcomer meets. Undefined for anything else.
 */
export function explainPostgresFailure(err: Failure, databaseUrl: string): StartupError | undefined {
  let url: URL | undefined;
  try {
    url = new URL(databaseUrl);
  } catch {}
  const host = url?.hostname || 'localhost';
  const where = url ? `${host}:${url.port || 5432}` : 'its server';
  const user = decodeURIComponent(url?.username ?? '') || 'postgres';
  const database = decodeURIComponent(url?.pathname.slice(1) ?? '') || user;
  const code = codeOf(err);
  const unset = 'or unset DATABASE_URL to use the embedded PostgreSQL in DATA_DIR';
  let message: string | undefined;
  if (code === 'ECONNREFUSED') {
    message = `Cannot connect to Postgres at ${where} (DATABASE_URL): nothing accepts connections there. Start Postgres, correct the host and port in DATABASE_URL, ${unset}.`;
  } else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    message = `DATABASE_URL names the host "${host}", which this machine cannot resolve. Correct the host in DATABASE_URL, ${unset}.`;
  } else if (code === '3D000') {
    message = `The database "${database}" does not exist on the Postgres server at ${where} (DATABASE_URL). Create it (createdb -h ${host} -U ${user} ${database}) or correct the name in DATABASE_URL.`;
  } else if (code === '28P01' || code === '28000') {
    message = `Postgres at ${where} refused the user "${user}" of DATABASE_URL (${err.message}). Correct the user and password in DATABASE_URL, or grant that user access.`;
  } else if (code === 'ETIMEDOUT' || /timeout expired|connection timeout/i.test(err.message)) {
    message = `Postgres at ${where} (DATABASE_URL) did not answer in time. Check that it runs and that this machine can reach it, or correct DATABASE_URL.`;
  } else if (/unsupported startup parameter/.test(err.message)) {
    // PgBouncer refuses the timeouts the pool sends at connect unless told it is in front (DATABASE_POOLING).
    message = `The server at ${where} (DATABASE_URL) refused a setting sent when connecting (${err.message}), as PgBouncer does. Behind PgBouncer set DATABASE_POOLING=transaction, and the timeouts on the role (docs/OPERATIONS.md, PgBouncer).`;
  }
  return message === undefined ? undefined : new StartupError(message, { cause: err });
}

const DATA_DIR_REASONS: Record<string, string> = {
  EACCES: 'this user may not write there',
  EPERM: 'this user may not write there',
  EROFS: 'it is on a read-only file system',
  ENOTDIR: 'a part of that path is a file, not a folder',
  EEXIST: 'it is a file, not a folder',
  ENOSPC: 'the disk is full',
};

/** DATA_DIR cannot be made or written: one sentence saying which folder, why, and what to do. */
export function explainDataDirFailure(err: Failure, dir: string): StartupError | undefined {
  const reason = DATA_DIR_REASONS[codeOf(err) ?? ''];
  if (!reason) return undefined;
  return new StartupError(
    `DATA_DIR (${dir}) cannot hold the embedded database: ${reason}. Set DATA_DIR to a folder this user can write, or set DATABASE_URL to use Postgres.`,
    { cause: err },
  );
}
