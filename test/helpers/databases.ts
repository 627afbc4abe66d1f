import pg from 'pg';
import { forget, remember } from './cleanup.js';

/** How the clean-up registry (cleanup.ts) knows a database: by server and name. */
const noted = (adminUrl: string, name: string) => `database ${new URL(adminUrl).host} ${name}`;

/** Replaces the clean-up of database `name` (a plain drop) with `undo`: say, close its pool first. */
export function rememberDatabase(adminUrl: string, name: string, undo: () => Promise<unknown>): void {
  remember(noted(adminUrl, name), `drop database ${name}`, undo);
}

/** The URL of database `name` on the Postgres server of `adminUrl`. */
function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function asAdmin(adminUrl: string, work: (admin: pg.Client) => Promise<void>): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await work(admin);
  } finally {
    await admin.end();
  }
}

/**
 * Creates database `name` on the server of `adminUrl`, empty or as a copy of `template`,
 * replacing one an earlier run left behind; returns its URL.
 */
export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<string> {
  const creating = asAdmin(adminUrl, async (admin) => {
    const id = admin.escapeIdentifier(name);
    await admin.query(`DROP DATABASE IF EXISTS ${id} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${id}${template ? ` TEMPLATE ${admin.escapeIdentifier(template)}` : ''}`);
  });
  // Noted before it exists: a clean-up while CREATE DATABASE runs waits for it, then drops.
  rememberDatabase(adminUrl, name, async () => {
    await creating.catch(() => {});
    await dropDatabase(adminUrl, name);
  });
  await creating;
  return databaseUrl(adminUrl, name);
}

/** Drops every database whose name matches `pattern` (SQL LIKE), ending its connections. */
export async function dropDatabases(adminUrl: string, pattern: string): Promise<void> {
  await asAdmin(adminUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [pattern]);
    for (const { datname } of rows) {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
      forget(noted(adminUrl, datname));
    }
  });
}

/** Drops database `name`, ending its connections. */
export function dropDatabase(adminUrl: string, name: string): Promise<void> {
  return dropDatabases(adminUrl, name.replace(/[\\_%]/g, '\\$&'));
}
