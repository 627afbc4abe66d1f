// npm run compat:check: does openapi.yaml keep the promise of the released /v1 (api/released/v1.yaml)?
import { join } from 'node:path';
import { parseCommandLine } from './lib/cli.js';
import { compatCheck, ensureTool, RELEASED, ROOT } from './lib/compat.js';

const USAGE = `Usage: npm run compat:check [-- --released <file>] [--current <file>]

Compares openapi.yaml (--current) with the released /v1 document, ${RELEASED}
(--released), using Optic's breaking-changes ruleset (installed into tools/compat on first
use) and the checks of scripts/lib/compat.ts (a request media type or query parameter removed, a
format changed, a stable or beta operation made less stable, ...). Operations experimental in the
released document, deprecated ones past their Sunset, and beta ones past the sunset of their
released x-deprecation are outside the promise; enums marked x-extensible-enum may gain values.
Exit 0: no breaking change; 1: a breaking change, listed.`;

const { values } = parseCommandLine(USAGE, { options: { released: { type: 'string' }, current: { type: 'string' } } });
try {
  ensureTool((line) => console.log(line));
  const result = await compatCheck(values.released ?? join(ROOT, RELEASED), values.current ?? join(ROOT, 'openapi.yaml'));
  console.log(result.report);
  process.exitCode = result.ok ? 0 : 1;
} catch (err) {
  console.error(`compat:check: ${(err as Error).message}`);
  process.exitCode = 1;
}
