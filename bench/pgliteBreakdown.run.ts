/**
 * The PGlite breakdown on its own (npm run bench runs it too): USAGE below.
 */
import { readFile } from 'node:fs/promises';
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { pgliteBreakdown, renderPgliteBreakdown, type PgliteBreakdown } from './pgliteBreakdown.js';

const USAGE = `Usage: npx tsx bench/pgliteBreakdown.run.ts [--pets 10000] [--seconds 1] [--rounds 5] [--json] [--from result.json]

Measures the embedded store (PGlite) layer by layer against Postgres, as npm run bench does:
progress on stderr, Markdown on stdout (with --json the result itself); --from renders a result
saved with --json. Uses Postgres at BENCH_DATABASE_URL, else DATABASE_URL, else 127.0.0.1:5432
when it answers; its stores and database are removed at the end, on failure and on Ctrl-C.`;

const { values } = parseCommandLine(USAGE, {
  options: {
    pets: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
    from: { type: 'string' },
  },
});

await runCommand(async () => {
  const result: PgliteBreakdown = values.from
    ? (JSON.parse(await readFile(values.from, 'utf8')) as PgliteBreakdown)
    : await pgliteBreakdown({
        pets: Number(values.pets),
        seconds: Number(values.seconds),
        rounds: Number(values.rounds),
        log: (msg) => process.stderr.write(`${msg}\n`),
      });
  process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : renderPgliteBreakdown(result));
});
