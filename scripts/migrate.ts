// npm run migrate: applies pending migrations (the server also does this at start).
import { openCliDatabase } from './cliDatabase.js';

const db = await openCliDatabase(); // opening migrates, under the advisory lock
await db.close();
console.log('Database is up to date.');
