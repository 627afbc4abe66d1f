import { openDatabase } from './src/db/database.ts';
const t0 = Date.now();
const db = await openDatabase({ databaseUrl: undefined, dataDir: process.argv[2]!, poolMax: 2, onIdleError: (e) => console.error('IDLE', e.message) });
console.log('open', Date.now() - t0, db.migrated.length, (await db.pool.query('select 1 as x')).rows);
const t1 = Date.now(); await db.close(); console.log('closed', Date.now() - t1);
