/**
 * npx tsx scripts/bench/pgliteBreakdown.run.ts [--pets 10000] [--seconds 1] [--rounds 5] [--json] [--from result.json]
 * The PGlite breakdown on its own (npm run bench runs it too): progress on stderr, Markdown
 * (or with --json the result) on stdout; --from renders a result saved with --json.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pgliteBreakdown, renderPgliteBreakdown, type PgliteBreakdown } from './pgliteBreakdown.js';

const { values } = parseArgs({
  options: {
    pets: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
    json: { type: 'boolean', default: false },
    from: { type: 'string' },
  },
});

const result: PgliteBreakdown = values.from
  ? (JSON.parse(await readFile(values.from, 'utf8')) as PgliteBreakdown)
  : await pgliteBreakdown({
      pets: Number(values.pets),
      seconds: Number(values.seconds),
      rounds: Number(values.rounds),
      log: (msg) => process.stderr.write(`${msg}\n`),
    });
process.stdout.write(values.json ? `${JSON.stringify(result, null, 2)}\n` : renderPgliteBreakdown(result));
