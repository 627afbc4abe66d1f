import { loadConfig } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/database.js';

/** The server's database, for command-line tools: DATABASE_URL, or the embedded PostgreSQL in DATA_DIR (the running one, else started for the command). */
export function openCliDatabase(): Promise<Database> {
  const config = loadConfig();
  return openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolMax: 2,
    onIdleError: () => {},
  });
}
