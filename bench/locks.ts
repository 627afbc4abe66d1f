/**
 * What createPet locks, said twice so that no number can hide a lock again (issue 35): by the
 * text of the statements the ceiling runs (it imports src/pets/sql.ts, as the service's
 * repository does), and by what Postgres shows (pg_locks) while each createPet arm runs.
 */
import pg from 'pg';
import type { Arm, Measurement } from './load.js';

/** The statements the ceiling runs for one createPet, by where they come from (GET /statements). */
export interface Statements {
  createPet: Record<string, string>;
}

/** The advisory locks (pg_advisory_lock, pg_advisory_xact_lock, …) statements take: each, with the statement it is in. */
export function advisoryLocksIn(statements: Record<string, string>): string[] {
  return Object.entries(statements).flatMap(([name, text]) =>
    [...new Set(text.match(/pg_(try_)?advisory_(xact_)?lock(_shared)?/gi) ?? [])].map((lock) => `${lock} in ${name}`),
  );
}

/** Samples of pg_locks taken while an arm ran: how many, and how many saw an advisory lock held or awaited in its database. */
export interface LockSamples {
  samples: number;
  withAdvisoryLock: number;
}

/**
 * Watches pg_locks every `everyMs` while an arm runs (`around`, for pairedRounds), for arms
 * whose database is named in `databases` (arm name → database name); other arms run as they are.
 */
export async function watchAdvisoryLocks(adminUrl: string, databases: Map<string, string>, everyMs = 50) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  const seen = new Map<string, LockSamples>();
  const around = async (arm: Arm, run: () => Promise<Measurement>): Promise<Measurement> => {
    const database = databases.get(arm.name);
    if (!database) return run();
    const tally = seen.get(arm.name) ?? { samples: 0, withAdvisoryLock: 0 };
    seen.set(arm.name, tally);
    let running = true;
    const sampling = (async () => {
      while (running) {
        const { rows } = await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND d.datname = $1`,
          [database],
        );
        tally.samples++;
        if (rows[0]!.n > 0) tally.withAdvisoryLock++;
        await new Promise((r) => setTimeout(r, everyMs));
      }
    })();
    try {
      return await run();
    } finally {
      running = false;
      await sampling;
    }
  };
  return { around, seen, close: () => client.end() };
}
