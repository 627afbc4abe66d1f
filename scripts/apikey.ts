// npm run --silent apikey -- create|list|revoke: manages API keys in the server's database.
import { parseArgs } from 'node:util';
import { openCliDatabase } from './cliDatabase.js';
import { isWellFormedKey } from '../src/auth/apiKey.js';
import { apiKeysRepository, PLANS, type ApiKeyRecord, type Plan } from '../src/auth/apiKeys.js';

const USAGE = `Usage:
  npm run --silent apikey -- create --plan <${PLANS.join('|')}> [--name <text>] [--per-minute <n> --per-day <n>]
  npm run --silent apikey -- list
  npm run --silent apikey -- revoke <id or key>

create prints the new key alone on the last line; it is not stored and cannot be shown again.
--per-minute and --per-day are required for, and only for, the enterprise plan.`;

class UsageError extends Error {}

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw new UsageError(`${flag} must be a positive integer`);
  return Number(value);
}

function parseCreate(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    options: { plan: { type: 'string' }, name: { type: 'string' }, 'per-minute': { type: 'string' }, 'per-day': { type: 'string' } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  const plan = values.plan as Plan | undefined;
  if (!plan || !PLANS.includes(plan)) throw new UsageError(`--plan must be one of: ${PLANS.join(', ')}`);
  const perMinute = positiveInt(values['per-minute'], '--per-minute');
  const perDay = positiveInt(values['per-day'], '--per-day');
  const hasLimits = perMinute !== undefined && perDay !== undefined;
  if (plan === 'enterprise' && !hasLimits) throw new UsageError('the enterprise plan needs --per-minute and --per-day');
  if (plan !== 'enterprise' && (perMinute !== undefined || perDay !== undefined)) {
    throw new UsageError('--per-minute and --per-day are only for the enterprise plan');
  }
  return { plan, name: values.name, perMinute, perDay };
}

function formatRow(k: ApiKeyRecord): string {
  const limits = k.perMinute ? `${k.perMinute}/min ${k.perDay}/day` : 'plan';
  const date = (d: Date | null) => (d ? d.toISOString() : '-');
  return [k.id, k.name || '-', k.plan, limits, date(k.createdAt), date(k.lastUsedAt), k.revokedAt ? `revoked ${date(k.revokedAt)}` : 'active'].join('\t');
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Parse everything before touching the database, so bad arguments fail fast.
  let run: (repo: ReturnType<typeof apiKeysRepository>) => Promise<number>;
  if (command === 'create') {
    const opts = parseCreate(rest);
    run = async (repo) => {
      const { key, record } = await repo.create(opts);
      console.log(`Created API key ${record.id} (${record.plan}${record.name ? `, "${record.name}"` : ''}). Store it now; it cannot be shown again:`);
      console.log(key);
      return 0;
    };
  } else if (command === 'list' && rest.length === 0) {
    run = async (repo) => {
      console.log(['id', 'name', 'plan', 'limits', 'created', 'last used', 'state'].join('\t'));
      for (const k of await repo.list()) console.log(formatRow(k));
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
      if (!revoked) {
        console.error('No such API key.');
        return 1;
      }
      console.log(`Revoked API key ${revoked.id}.`);
      return 0;
    };
  } else {
    throw new UsageError(command ? `unknown command or arguments: ${argv.join(' ')}` : 'missing command');
  }

  const db = await openCliDatabase();
  try {
    return await run(apiKeysRepository(db.pool));
  } finally {
    await db.close();
  }
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`Error: ${(err as Error).message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else {
    console.error(`Error: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
