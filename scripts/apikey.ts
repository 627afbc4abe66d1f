// npm run --silent apikey -- create|list|revoke: the operator's door to accounts and their API keys.
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openCliDatabase } from './cliDatabase.js';
import { isWellFormedKey } from '../src/auth/apiKey.js';
import { accountsRepository, SCOPES, type AccountsRepository, type KeyListing, type Plan } from '../src/accounts/repository.js';
import type { Database } from '../src/db/database.js';
import { enumValues, loadDocument } from '../src/openapi/document.js';

/** The plans an account may be on: openapi.yaml's Plan enum. */
const PLANS = enumValues(loadDocument(), 'Plan');

/** Where the command writes: one line per call (console.log and console.error when run as a script). */
export interface CliIo {
  stdout(line: string): void;
  stderr(line: string): void;
}

export interface CliDeps {
  /** Opens the server's database; by default as configured by the environment (DATABASE_URL or DATA_DIR). */
  openDatabase?: () => Promise<Database>;
}

const USAGE = `Usage: npm run --silent apikey -- create --plan <${PLANS.join('|')}> [--name <text>] [--per-minute <n> --per-day <n> [--open-orders <n>]]
       npm run --silent apikey -- create --account <id> [--name <text>]
       npm run --silent apikey -- list
       npm run --silent apikey -- revoke <id or key>

create makes a new account on the plan and its first key, or with --account adds a key to an
existing account; the key holds every scope. It prints the key alone on the last line; it is
not stored and cannot be shown again.
--per-minute and --per-day are required for, and only for, the enterprise plan; --open-orders
(placed orders held at once) is for it only, else OPEN_ORDERS_ENTERPRISE applies.
The database is DATABASE_URL's, or the embedded PostgreSQL in DATA_DIR (./data): the running
one, else started for the command.`;

class UsageError extends Error {}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw new UsageError(`${flag} must be a positive integer`);
  return Number(value);
}

function parseCreate(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    options: { plan: { type: 'string' }, name: { type: 'string' }, 'per-minute': { type: 'string' }, 'per-day': { type: 'string' }, 'open-orders': { type: 'string' }, account: { type: 'string' } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  if (values.account !== undefined) {
    if (values.plan !== undefined || values['per-minute'] !== undefined || values['per-day'] !== undefined || values['open-orders'] !== undefined) {
      throw new UsageError('--account adds a key to an account, whose plan and limits stay as they are: leave out --plan, --per-minute, --per-day and --open-orders');
    }
    return { account: positiveInt(values.account, '--account')!, name: values.name };
  }
  const plan = values.plan as Plan | undefined;
  if (!plan || !PLANS.includes(plan)) throw new UsageError(`--plan must be one of: ${PLANS.join(', ')}`);
  const perMinute = positiveInt(values['per-minute'], '--per-minute');
  const perDay = positiveInt(values['per-day'], '--per-day');
  const maxOpenOrders = positiveInt(values['open-orders'], '--open-orders');
  if (plan !== 'enterprise' && maxOpenOrders !== undefined) throw new UsageError('--open-orders is only for the enterprise plan');
  const hasLimits = perMinute !== undefined && perDay !== undefined;
  if (plan === 'enterprise' && !hasLimits) throw new UsageError('the enterprise plan needs --per-minute and --per-day');
  if (plan !== 'enterprise' && (perMinute !== undefined || perDay !== undefined)) {
    throw new UsageError('--per-minute and --per-day are only for the enterprise plan');
  }
  return { plan, name: values.name, perMinute, perDay, maxOpenOrders };
}

function formatRow(k: KeyListing): string {
  const limits = k.perMinute ? `${k.perMinute}/min ${k.perDay}/day` : 'plan';
  const date = (d: Date | null) => (d ? d.toISOString() : '-');
  const state = k.revokedAt ? `revoked ${date(k.revokedAt)}` : k.expiresAt ? `${k.expiresAt > new Date() ? 'expires' : 'expired'} ${date(k.expiresAt)}` : 'active';
  // The account comes last: scripts that read the columns before it by position keep working.
  return [k.id, k.name || '-', k.plan, limits, date(k.createdAt), date(k.lastUsedAt), state, k.accountId].join('\t');
}

/**
 * Runs the command line `argv` (without node and the script) and returns the exit code:
 * 0 done (or --help, -h: the usage on stdout), 1 failed (unknown key, database error),
 * 2 bad arguments (with the usage text).
 * Arguments are checked before the database is opened.
 */
export async function main(argv: string[], io: CliIo, deps: CliDeps = {}): Promise<number> {
  try {
    return await execute(argv, io, deps.openDatabase ?? openCliDatabase);
  } catch (err) {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`Error: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr(`Error: ${(err as Error).message}`);
    return 1;
  }
}

async function execute(argv: string[], io: CliIo, openDatabase: () => Promise<Database>): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    io.stdout(USAGE);
    return 0;
  }
  const [command, ...rest] = argv;
  // Parse everything before touching the database, so bad arguments fail fast.
  let run: (repo: AccountsRepository) => Promise<number>;
  if (command === 'create') {
    const opts = parseCreate(rest);
    run = async (repo) => {
      const named = opts.name ? `, "${opts.name}"` : '';
      if (opts.account !== undefined) {
        const key = await repo.createKey(opts.account, { name: opts.name ?? '', scopes: SCOPES }, false);
        if (!key) {
          io.stderr(`No such account: ${opts.account}.`);
          return 1;
        }
        io.stdout(`Created API key ${key.id} of account ${opts.account}${named}. Store it now; it cannot be shown again:`);
        io.stdout(key.secret);
        return 0;
      }
      const { accountId, key } = await repo.createAccount(opts);
      io.stdout(`Created account ${accountId} (${opts.plan}${named}) and its API key ${key.id}. Store it now; it cannot be shown again:`);
      io.stdout(key.secret);
      return 0;
    };
  } else if (command === 'list' && rest.length === 0) {
    run = async (repo) => {
      io.stdout(['id', 'name', 'plan', 'limits', 'created', 'last used', 'state', 'account'].join('\t'));
      for (const k of await repo.list()) io.stdout(formatRow(k));
      return 0;
    };
  } else if (command === 'revoke' && rest.length === 1) {
    const target = rest[0]!;
    const selector = /^[1-9][0-9]{0,15}$/.test(target)
      ? { id: Number(target) }
      : isWellFormedKey(target)
        ? { key: target }
        : undefined;
    if (!selector) throw new UsageError('revoke takes a key id or an API key');
    run = async (repo) => {
      const revoked = await repo.revoke(selector);
      if (revoked === undefined) {
        io.stderr('No such API key.');
        return 1;
      }
      io.stdout(`Revoked API key ${revoked}.`);
      return 0;
    };
  } else {
    throw new UsageError(command ? `unknown command or arguments: ${argv.join(' ')}` : 'missing command');
  }

  const db = await openDatabase();
  try {
    return await run(accountsRepository(db.pool));
  } finally {
    await db.close();
  }
}

/** Whether this file is the process's entry point (npm run apikey), not a module imported by a test. */
function runAsScript(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (runAsScript()) {
  process.exitCode = await main(process.argv.slice(2), {
    stdout: (line) => console.log(line),
    stderr: (line) => console.error(line),
  });
}
