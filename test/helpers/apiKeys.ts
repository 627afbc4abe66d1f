import type { Plan } from '../../src/accounts/repository.js';
import { runScript } from './processes.js';

export interface KeyOptions {
  plan: Plan;
  name?: string;
  /** Enterprise limits. */
  perMinute?: number;
  perDay?: number;
  /** Enterprise only: placed orders the account may hold at once (`--open-orders`). */
  maxOpenOrders?: number;
}

/**
 * Creates an API key with `npm run apikey -- create`, in the database that `env` names
 * (DATABASE_URL, or DATA_DIR: through the server that holds it, if one runs); returns the key.
 */
export async function createKey(env: Record<string, string>, { plan, name, perMinute, perDay, maxOpenOrders }: KeyOptions): Promise<string> {
  const args = ['create', '--plan', plan];
  if (name !== undefined) args.push('--name', name);
  if (perMinute !== undefined) args.push('--per-minute', String(perMinute));
  if (perDay !== undefined) args.push('--per-day', String(perDay));
  if (maxOpenOrders !== undefined) args.push('--open-orders', String(maxOpenOrders));
  const res = await runScript('scripts/apikey.ts', args, env);
  if (res.code !== 0) throw new Error(`npm run apikey -- ${args.join(' ')} exited with ${res.code}:\n${res.stderr}`);
  return res.stdout.trim().split('\n').at(-1)!;
}

/** A key of the enterprise plan whose quota no test reaches. */
export const unlimitedKey = (env: Record<string, string>) => createKey(env, { plan: 'enterprise', perMinute: 1_000_000, perDay: 10_000_000 });
