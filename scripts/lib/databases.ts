import pg from 'pg';

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
  await asAdmin(adminUrl, async (admin) => {
    const id = admin.escapeIdentifier(name);
    await admin.query(`DROP DATABASE IF EXISTS ${id} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${id}${template ? ` TEMPLATE ${admin.escapeIdentifier(template)}` : ''}`);
  });
  return databaseUrl(adminUrl, name);
}

/** Drops every database whose name matches `pattern` (SQL LIKE), ending its connections. */
export async function dropDatabases(adminUrl: string, pattern: string): Promise<void> {
  await asAdmin(adminUrl, async (admin) => {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [pattern]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(datname)} WITH (FORCE)`);
  });
}

/** Drops database `name`, ending its connections. */
export function dropDatabase(adminUrl: string, name: string): Promise<void> {
  return dropDatabases(adminUrl, name.replace(/[\\_%]/g, '\\$&'));
}
