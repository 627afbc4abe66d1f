// npm run migrate: applies pending migrations (the server also does this at start) and says which.
import { parseCommandLine } from './lib/cli.js';
import { openCliDatabase } from './cliDatabase.js';

const USAGE = `Usage: npm run migrate

Applies the SQL migrations in src/db/migrations/ that the database has not had yet, in name
order, in one transaction under an advisory lock (the server does the same when it starts),
and lists what it applied. The database is DATABASE_URL's, or the embedded PostgreSQL in DATA_DIR
(./data): the running one, else started for the command.`;

parseCommandLine(USAGE);
try {
  const db = await openCliDatabase(); // opening migrates, under the advisory lock
  await db.close();
  const where = db.kind === 'postgres' ? 'DATABASE_URL' : 'the embedded store';
  if (db.migrated.length === 0) console.log(`Database is up to date (${where}): no migration was pending.`);
  else console.log(`Applied ${db.migrated.length} migration(s) to ${where}:\n${db.migrated.map((file) => `  ${file}`).join('\n')}`);
} catch (err) {
  console.error((err as Error).message);
  process.exitCode = 1;
}
