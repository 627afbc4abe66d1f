// The compatibility promise of /v1 (docs/API-BEHAVIOUR.md, Versioning and Stability), checked
// between the released copy of openapi.yaml (api/released/v1.yaml) and the document as it is.
// The detector is Optic's breaking-changes ruleset (@useoptic/optic, pinned in tools/compat);
// this file decides what the promise leaves out and adds the few checks Optic does not make.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The released /v1 document, relative to the repository. */
export const RELEASED = 'api/released/v1.yaml';
export const TOOL_DIR = join(ROOT, 'tools/compat');
export const OPTIC = join(TOOL_DIR, 'node_modules/.bin/optic');
export const OPTIC_STANDARD = join(TOOL_DIR, 'optic.yml');
/** Optic's rule name for enum changes: new ErrorCode values are promised to clients (Versioning). */
const ENUM_RULE = 'request and response property enums';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Record<string, unknown>;
type Operation = Json & { deprecated?: boolean; 'x-badges'?: unknown; 'x-deprecation'?: { sunset?: unknown } };

/** Installs Optic into tools/compat from its lockfile when it is missing (npm ci, about 30 s). */
export function ensureTool(log: (line: string) => void = () => {}): void {
  if (existsSync(OPTIC)) return;
  log(`compat:check: installing the detector (npm ci in ${TOOL_DIR})`);
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: TOOL_DIR, stdio: 'inherit' });
  if (npm.status !== 0 || !existsSync(OPTIC)) throw new Error(`could not install Optic in ${TOOL_DIR} (npm ci exited ${npm.status})`);
}

export const isExperimental = (op: Operation): boolean =>
  Array.isArray(op['x-badges']) && op['x-badges'].some((badge) => (badge as { name?: unknown } | null)?.name === 'Experimental');

/** When a deprecated operation may be removed (its x-deprecation.sunset), or undefined. */
export function sunsetOf(op: Operation): Date | undefined {
  const sunset = op['x-deprecation']?.sunset;
  if (typeof sunset !== 'string') return undefined;
  const date = new Date(sunset);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function operations(doc: Json): Map<string, Operation> {
  const found = new Map<string, Operation>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      const op = item?.[method];
      if (op && typeof op === 'object') found.set(`${method.toUpperCase()} ${path}`, op as Operation);
    }
  }
  return found;
}

/** The header names (lower case) each status of an operation declares, $refs to components.responses followed. */
function responseHeaders(doc: Json, op: Operation): Map<string, Set<string>> {
  const responses = (doc.components as Json | undefined)?.responses as Record<string, Json> | undefined;
  const byStatus = new Map<string, Set<string>>();
  for (const [status, declared] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
    let response: Json | undefined = declared;
    const ref = response?.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/responses/')) response = responses?.[ref.slice('#/components/responses/'.length)];
    byStatus.set(status, new Set(Object.keys((response?.headers ?? {}) as Json).map((name) => name.toLowerCase())));
  }
  return byStatus;
}

export interface Prepared {
  /** Both documents as Optic is to compare them, the operations outside the promise marked. */
  released: Json;
  current: Json;
  /** Operations outside the promise, with the reason. */
  exempt: Map<string, string>;
  /** Breaks of the promise that Optic does not look for. */
  problems: string[];
  /** Request values refused now that passed before (tighter constraints): for review, not failures. */
  warnings: string[];
}

/**
 * What the promise covers: every operation of the released document but those that are
 * experimental there (x-badges Experimental) and those deprecated whose Sunset has passed,
 * which may change or go. New ErrorCode values are allowed (Versioning). Checked here besides
 * Optic: a response header removed, an operation stable when released marked experimental
 * now, and a deprecation without a Sunset date.
 */
export function prepare(releasedDoc: Json, currentDoc: Json, now = new Date()): Prepared {
  const released = structuredClone(releasedDoc);
  const current = structuredClone(currentDoc);
  const before = operations(released);
  const after = operations(current);
  const exempt = new Map<string, string>();
  const problems: string[] = [];
  const warnings: string[] = [];

  for (const [key, op] of before) {
    const sunset = sunsetOf(op);
    if (isExperimental(op)) exempt.set(key, 'experimental');
    else if (op.deprecated && sunset && sunset <= now) exempt.set(key, `deprecated, Sunset ${sunset.toISOString()} passed`);
  }
  for (const [key, op] of after) {
    const was = before.get(key);
    if (exempt.has(key) || !was) continue;
    if (isExperimental(op)) problems.push(`${key}: stable when released, marked experimental now (a stable operation stays stable within /v1)`);
    if (op.deprecated && !was.deprecated && !sunsetOf(op)) {
      problems.push(`${key}: deprecated without a Sunset date (x-deprecation.sunset) for its Sunset header`);
    }
    const headersBefore = responseHeaders(released, was);
    const headersAfter = responseHeaders(current, op);
    for (const [status, names] of headersBefore) {
      const still = headersAfter.get(status);
      if (!still) continue; // A removed status is Optic's to report.
      for (const name of names) if (!still.has(name)) problems.push(`${key}: response ${status} no longer declares the header ${name}`);
    }
    const params = (doc: Json, o: Operation) =>
      new Map(((o.parameters ?? []) as Json[]).map((p) => resolveRef(doc, p)).map((p) => [`${p.in} parameter ${p.name}`, p] as const));
    const paramsAfter = params(current, op);
    for (const [name, param] of params(released, was)) {
      if (paramsAfter.has(name)) tightened(released, current, param.schema, paramsAfter.get(name)!.schema, `${key}: ${name}`, warnings, new Set());
    }
    const bodyBefore = resolveRef(released, was.requestBody as Json | undefined);
    const bodyAfter = resolveRef(current, op.requestBody as Json | undefined);
    for (const [type, media] of Object.entries((bodyBefore?.content ?? {}) as Record<string, Json>)) {
      const mediaAfter = ((bodyAfter?.content ?? {}) as Record<string, Json>)[type];
      if (mediaAfter) tightened(released, current, media.schema, mediaAfter.schema, `${key}: request body (${type})`, warnings, new Set());
    }
  }
  for (const key of exempt.keys()) {
    for (const ops of [before, after]) {
      const op = ops.get(key);
      if (op) op['x-compat-exempt'] = true;
    }
  }
  for (const doc of [released, current]) {
    const errorCode = ((doc.components as Json | undefined)?.schemas as Record<string, Json> | undefined)?.ErrorCode;
    if (errorCode) errorCode['x-optic-exemptions'] = [ENUM_RULE];
  }
  return { released, current, exempt, problems, warnings: [...new Set(warnings)] };
}

/** Follows a local $ref (#/components/...) to what it names, once per level. */
function resolveRef(doc: Json, node: Json | undefined): Json {
  let found: Json | undefined = node;
  for (let hops = 0; hops < 10 && typeof found?.$ref === 'string'; hops++) {
    found = (found.$ref as string)
      .slice(2)
      .split('/')
      .reduce<Json | undefined>((at, part) => at?.[part.replace(/~1/g, '/').replace(/~0/g, '~')] as Json | undefined, doc);
  }
  return found ?? {};
}

/** Limits whose change refuses values that passed: lower maxima, higher minima. */
const TIGHTER: Record<string, (before: number, after: number) => boolean> = {
  maxLength: (a, b) => b < a,
  maxItems: (a, b) => b < a,
  maxProperties: (a, b) => b < a,
  maximum: (a, b) => b < a,
  minLength: (a, b) => b > a,
  minItems: (a, b) => b > a,
  minProperties: (a, b) => b > a,
  minimum: (a, b) => b > a,
};

/** Walks a request schema in both documents side by side, noting each constraint made tighter. */
function tightened(releasedDoc: Json, currentDoc: Json, before: unknown, after: unknown, where: string, out: string[], seen: Set<string>): void {
  if (!before || !after || typeof before !== 'object' || typeof after !== 'object') return;
  const pair = `${(before as Json).$ref ?? ''}|${(after as Json).$ref ?? ''}`;
  if (pair !== '|') {
    if (seen.has(pair)) return;
    seen = new Set(seen).add(pair);
  }
  const a = resolveRef(releasedDoc, before as Json);
  const b = resolveRef(currentDoc, after as Json);
  for (const [keyword, tighter] of Object.entries(TIGHTER)) {
    const was = a[keyword];
    const is = b[keyword];
    if (typeof is === 'number' && (typeof was !== 'number' || tighter(was, is))) out.push(`${where}: ${keyword} ${was ?? 'none'} -> ${is}`);
  }
  if (typeof b.pattern === 'string' && b.pattern !== a.pattern) out.push(`${where}: pattern ${a.pattern === undefined ? 'added' : 'changed'}`);
  const propsBefore = (a.properties ?? {}) as Json;
  const propsAfter = (b.properties ?? {}) as Json;
  for (const name of Object.keys(propsBefore)) {
    if (name in propsAfter) tightened(releasedDoc, currentDoc, propsBefore[name], propsAfter[name], `${where} ${name}`, out, seen);
  }
  tightened(releasedDoc, currentDoc, a.items, b.items, `${where}[]`, out, seen);
  for (const combiner of ['allOf', 'oneOf', 'anyOf']) {
    const listBefore = (a[combiner] ?? []) as unknown[];
    const listAfter = (b[combiner] ?? []) as unknown[];
    listBefore.forEach((sub, i) => tightened(releasedDoc, currentDoc, sub, listAfter[i], `${where} (${combiner} ${i})`, out, seen));
  }
}

export interface CheckResult {
  ok: boolean;
  /** What to print: the exemptions, Optic's report, the other problems and the verdict. */
  report: string;
}

/** Runs Optic on the prepared documents: resolves whether the promise holds, with the report. */
export async function compatCheck(releasedPath: string, currentPath: string, { now = new Date() }: { now?: Date } = {}): Promise<CheckResult> {
  const prepared = prepare(YAML.parse(readFileSync(releasedPath, 'utf8')), YAML.parse(readFileSync(currentPath, 'utf8')), now);
  const dir = mkdtempSync(join(tmpdir(), 'compat-check-'));
  try {
    writeFileSync(join(dir, 'released.yaml'), YAML.stringify(prepared.released, { aliasDuplicateObjects: false }));
    writeFileSync(join(dir, 'current.yaml'), YAML.stringify(prepared.current, { aliasDuplicateObjects: false }));
    const optic = await run(OPTIC, ['diff', 'released.yaml', 'current.yaml', '--check', '--standard', OPTIC_STANDARD], dir);
    const lines = [
      `compat:check: ${releasedPath} -> ${currentPath} (Optic's breaking-changes ruleset, tools/compat/optic.yml)`,
      `outside the promise: ${prepared.exempt.size} operations`,
      ...[...prepared.exempt].map(([key, reason]) => `  ${key} (${reason})`),
      // Without its advice to rerun with --web (a page in a browser), which the check does not use.
      optic.output.replace(/^Rerun this command with the --web flag.*\n?/m, '').trimEnd(),
      ...prepared.problems.map((problem) => `x ${problem}`),
      ...prepared.warnings.map((warning) => `! for review, not a failure (a tighter request constraint keeps the promise only if the service already enforced it): ${warning}`),
    ];
    const ok = optic.code === 0 && prepared.problems.length === 0;
    lines.push(ok ? 'compat:check: no breaking change' : 'compat:check: BREAKING: the changes above break the /v1 promise (docs/API-BEHAVIOUR.md, Versioning)');
    return { ok, report: lines.join('\n') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    // TELEMETRY_LEVEL=off: Optic sends no usage data (nor tries to: this machine reaches no such host).
    const child = spawn(command, args, { cwd, env: { ...process.env, TELEMETRY_LEVEL: 'off', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, output }));
  });
}
