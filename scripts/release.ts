// npm run release: records openapi.yaml as the released /v1 document and adds its CHANGELOG.md entry.
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { parseCommandLine } from './lib/cli.js';
import { compatCheck, ensureTool, RELEASED, ROOT } from './lib/compat.js';

const USAGE = `Usage: npm run release -- [--summary <text>]

Releases openapi.yaml as it is: runs compat:check against ${RELEASED} and refuses a
breaking change (that needs /v2) or a version already in CHANGELOG.md (raise info.version,
and package.json's version with it: minor for additions, patch for corrections). Then copies
openapi.yaml to ${RELEASED} and adds an entry to CHANGELOG.md: the version, today's date (UTC)
and --summary (by default, the operations added and removed since the last release).
Commit both files.`;

const HEADER = `# Changelog

Releases of the HTTP API, newest first. Each entry is the state of \`openapi.yaml\` copied to
\`${RELEASED}\` by \`npm run release\`, the document \`npm run compat:check\` holds later
changes to (docs/API-BEHAVIOUR.md, Versioning).
`;

type Json = Record<string, unknown>;

function operationIds(doc: Json): Set<string> {
  const ids = new Set<string>();
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Record<string, { operationId?: string }>>)) {
    for (const op of Object.values(item ?? {})) if (op && typeof op === 'object' && typeof op.operationId === 'string') ids.add(op.operationId);
  }
  return ids;
}

/** The default summary: which operations came and went since the released copy. */
export function defaultSummary(released: Json, current: Json): string {
  const before = operationIds(released);
  const after = operationIds(current);
  const added = [...after].filter((id) => !before.has(id));
  const removed = [...before].filter((id) => !after.has(id));
  const parts = [];
  if (added.length) parts.push(`added ${added.join(', ')}`);
  if (removed.length) parts.push(`removed ${removed.join(', ')} (experimental or past its Sunset)`);
  return parts.length ? `Operations ${parts.join('; ')}.` : 'No operation added or removed; see the commits for what changed.';
}

/** Releases the document in `root` (the repository by default); returns the lines to print, or throws with why not. */
export async function release(root: string, { summary, now = new Date() }: { summary?: string; now?: Date } = {}): Promise<string[]> {
  const currentPath = join(root, 'openapi.yaml');
  const releasedPath = join(root, RELEASED);
  const changelogPath = join(root, 'CHANGELOG.md');
  const current = YAML.parse(readFileSync(currentPath, 'utf8')) as Json;
  const version = String((current.info as Json | undefined)?.version ?? '');
  if (!version) throw new Error('openapi.yaml has no info.version');
  const changelog = existsSync(changelogPath) ? readFileSync(changelogPath, 'utf8') : HEADER;
  if (new RegExp(`^## ${version.replace(/[.]/g, '\\.')} `, 'm').test(changelog)) {
    throw new Error(`${version} is already in CHANGELOG.md: raise info.version in openapi.yaml (and package.json's version) first`);
  }
  const lines: string[] = [];
  let released: Json = {};
  if (existsSync(releasedPath)) {
    const check = await compatCheck(releasedPath, currentPath, { now });
    if (!check.ok) throw new Error(`${check.report}\nnot released: a breaking change needs a new major version (/v2), not a /v1 release`);
    lines.push('compat:check: no breaking change');
    released = YAML.parse(readFileSync(releasedPath, 'utf8')) as Json;
  }
  const date = now.toISOString().slice(0, 10);
  const entry = `## ${version} (${date})\n\n${summary ?? defaultSummary(released, current)}\n`;
  const [head, ...rest] = changelog.split(/^(?=## )/m);
  writeFileSync(changelogPath, [head!.trimEnd() + '\n\n', entry, ...rest.map((old) => `\n${old}`)].join(''));
  writeFileSync(releasedPath, readFileSync(currentPath));
  lines.push(`released ${version}: openapi.yaml copied to ${RELEASED}, CHANGELOG.md entry added; commit both`);
  return lines;
}

const runAsScript = (() => {
  try {
    return realpathSync(process.argv[1] ?? '') === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
})();
if (runAsScript) {
  const { values } = parseCommandLine(USAGE, { options: { summary: { type: 'string' } } });
  try {
    ensureTool((line) => console.log(line));
    for (const line of await release(ROOT, { summary: values.summary })) console.log(line);
  } catch (err) {
    console.error(`release: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
