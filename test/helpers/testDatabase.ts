import pg from 'pg';
import { inject } from 'vitest';
import { createDatabase, dropDatabase } from './databases.js';
import { postgresServerUrl } from './services.js';

export interface TestDatabase {
  /** Settings for loadConfig: DATABASE_URL. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

let counter = 0;

/** A database name of this run (`as_<run id>_…`): the run's reaper drops it whatever ends the run. */
export const databaseName = (label: string) => `as_${inject('run').id}_${label}_${process.pid}`;

/** A fresh, migrated database of its own for one test file: a copy of the run's template on its Postgres server. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject('template');
  const name = databaseName(String(counter++));
  const url = await createDatabase(template.adminUrl, name, template.name);
  return { env: { DATABASE_URL: url }, drop: () => dropDatabase(template.adminUrl, name) };
}

export interface ServerDatabase extends TestDatabase {
  name: string;
  /** A connection to the server's admin database, for a test to break things with. */
  admin: pg.Client;
}

/** A new, empty database on the run's Postgres server, with an admin connection to break things with (faults). */
export async function createServerDatabase(label: string): Promise<ServerDatabase> {
  const adminUrl = postgresServerUrl();
  const name = databaseName(label);
  const url = await createDatabase(adminUrl, name);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  return {
    name,
    admin,
    env: { DATABASE_URL: url },
    async drop() {
      await admin.end();
      await dropDatabase(adminUrl, name);
    },
  };
}
