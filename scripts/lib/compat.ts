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
import { stabilityOf, type Stability } from '../../src/openapi/document.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The released /v1 document, relative to the repository. */
export const RELEASED = 'api/released/v1.yaml';
export const TOOL_DIR = join(ROOT, 'tools/compat');
export const OPTIC = join(TOOL_DIR, 'node_modules/.bin/optic');
export const OPTIC_STANDARD = join(TOOL_DIR, 'optic.yml');
/** A beta operation's notice of a breaking change: its x-deprecation.sunset at least this far ahead (docs/API-BEHAVIOUR.md). */
const BETA_NOTICE_DAYS = 90;
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

const RANK: Record<Stability, number> = { experimental: 0, beta: 1, stable: 2 };

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

/** Each status's response of an operation, $refs to components.responses followed. */
function responsesOf(doc: Json, op: Operation): Map<string, Json> {
  const byStatus = new Map<string, Json>();
  for (const [status, declared] of Object.entries((op.responses ?? {}) as Record<string, Json>)) byStatus.set(status, resolveRef(doc, declared));
  return byStatus;
}

/** The operation's parameters and its path item's, $refs followed, by "<in> parameter <name>". */
function parametersOf(doc: Json, key: string, op: Operation): Map<string, Json> {
  const shared = ((doc.paths as Record<string, Json>)[key.slice(key.indexOf(' ') + 1)]?.parameters ?? []) as Json[];
  const found = new Map<string, Json>();
  for (const declared of [...shared, ...((op.parameters ?? []) as Json[])]) {
    const param = resolveRef(doc, declared);
    found.set(`${param.in} parameter ${param.name}`, param);
  }
  return found;
}

const requestContent = (doc: Json, op: Operation) => (resolveRef(doc, op.requestBody as Json | undefined).content ?? {}) as Record<string, Json>;
const contentOf = (response: Json | undefined) => (response?.content ?? {}) as Record<string, Json>;

/** One operation in both documents: what the checks below compare. */
interface Pair {
  key: string;
  released: Json;
  current: Json;
  was: Operation;
  op: Operation;
}

export interface Prepared {
  /** Both documents as Optic is to compare them, the operations outside the promise marked. */
  released: Json;
  current: Json;
  /** Operations outside the promise, with the reason. */
  exempt: Map<string, string>;
  /** Breaks of the promise that Optic does not look for. */
  problems: string[];
  /** For review, not failures: tighter request constraints, values added to an enum opened in this change. */
  warnings: string[];
  /** Values added to enums declared open (x-extensible-enum): additive. */
  notes: string[];
}

/**
 * What the promise covers: every operation of the released document but those that are
 * experimental there (x-badges Experimental), those deprecated whose Sunset has passed, and
 * beta ones (x-badges Beta) whose x-deprecation, the notice of a breaking change, was released
 * and whose sunset has passed: these may change or go. Enums marked x-extensible-enum may gain
 * values. Checked here besides Optic, each by a named check below: a stable or beta operation
 * made less stable, a deprecation without a Sunset date, a beta notice shorter than 90 days, a
 * response header removed, a request media type removed, a query parameter removed or renamed,
 * a format changed.
 */
export function prepare(releasedDoc: Json, currentDoc: Json, now = new Date()): Prepared {
  const released = structuredClone(releasedDoc);
  const current = structuredClone(currentDoc);
  const before = operations(released);
  const after = operations(current);
  const exempt = new Map<string, string>();
  const problems: string[] = [];
  const warnings: string[] = [];
  const notes: string[] = [];

  for (const [key, op] of before) {
    const sunset = sunsetOf(op);
    const passed = sunset !== undefined && sunset <= now;
    if (stabilityOf(op) === 'experimental') exempt.set(key, 'experimental');
    else if (op.deprecated && passed) exempt.set(key, `deprecated, Sunset ${sunset.toISOString()} passed`);
    else if (stabilityOf(op) === 'beta' && passed) exempt.set(key, `beta, the change announced by x-deprecation, sunset ${sunset.toISOString()} passed`);
  }
  for (const [key, op] of after) {
    const was = before.get(key);
    if (exempt.has(key) || !was) continue;
    const pair: Pair = { key, released, current, was, op };
    problems.push(
      ...lessStable(pair),
      ...deprecatedWithoutSunset(pair),
      ...betaNoticeTooShort(pair, now),
      ...responseHeaderRemoved(pair),
      ...requestMediaTypeRemoved(pair),
      ...queryParameterRemoved(pair),
      ...formatChanged(pair),
    );
    warnings.push(...tighterRequest(pair));
  }
  for (const key of exempt.keys()) {
    for (const ops of [before, after]) {
      const op = ops.get(key);
      if (op) op['x-compat-exempt'] = true;
    }
  }
  openEnums(released, current, notes, warnings);
  return { released, current, exempt, problems: [...new Set(problems)], warnings: [...new Set(warnings)], notes };
}

/** Stable stays stable within /v1; beta may not fall back to experimental. */
function lessStable({ key, was, op }: Pair): string[] {
  const [then, now] = [stabilityOf(was), stabilityOf(op)];
  if (RANK[now] >= RANK[then]) return [];
  const why = then === 'stable' ? 'a stable operation stays stable within /v1' : 'a beta operation changes only with notice, by x-deprecation';
  return [`${key}: ${then} when released, marked ${now} now (${why})`];
}

function deprecatedWithoutSunset({ key, was, op }: Pair): string[] {
  return op.deprecated && !was.deprecated && !sunsetOf(op) ? [`${key}: deprecated without a Sunset date (x-deprecation.sunset) for its Sunset header`] : [];
}

/** A beta operation's new x-deprecation must give its clients at least 90 days. */
function betaNoticeTooShort({ key, was, op }: Pair, now: Date): string[] {
  const notice = op['x-deprecation'];
  if (stabilityOf(op) !== 'beta' || !notice || JSON.stringify(notice) === JSON.stringify(was['x-deprecation'])) return [];
  const sunset = sunsetOf(op);
  if (!sunset) return [`${key}: x-deprecation without a valid sunset date (the day the announced change takes effect)`];
  const earliest = new Date(now.getTime() + BETA_NOTICE_DAYS * 86_400_000);
  return sunset < earliest ? [`${key}: x-deprecation sunset ${sunset.toISOString()} is less than ${BETA_NOTICE_DAYS} days ahead (a beta operation's notice)`] : [];
}

/** A response header removed; but API-Stability goes when an operation graduates (stable responses carry none). */
function responseHeaderRemoved({ key, released, current, was, op }: Pair): string[] {
  const out: string[] = [];
  const graduated = RANK[stabilityOf(op)] > RANK[stabilityOf(was)];
  const headers = (response: Json | undefined) => new Set(Object.keys((response?.headers ?? {}) as Json).map((name) => name.toLowerCase()));
  const responsesAfter = responsesOf(current, op);
  for (const [status, response] of responsesOf(released, was)) {
    if (!responsesAfter.has(status)) continue; // A removed status is Optic's to report.
    const still = headers(responsesAfter.get(status));
    for (const name of headers(response)) if (!still.has(name) && !(graduated && name === 'api-stability')) out.push(`${key}: response ${status} no longer declares the header ${name}`);
  }
  return out;
}

/** Optic compares the schemas of the media types both documents have, not the list. */
function requestMediaTypeRemoved({ key, released, current, was, op }: Pair): string[] {
  const still = Object.keys(requestContent(current, op));
  return Object.keys(requestContent(released, was))
    .filter((type) => !still.includes(type))
    .map((type) => `${key}: the request body no longer accepts ${type} (clients sending it get 415)`);
}

/** Unknown query parameters are refused with 400 (docs/API-BEHAVIOUR.md), so a removed one, optional too, breaks its senders. */
function queryParameterRemoved({ key, released, current, was, op }: Pair): string[] {
  const still = parametersOf(current, key, op);
  return [...parametersOf(released, key, was)]
    .filter(([name, param]) => param.in === 'query' && !still.has(name))
    .map(([, param]) => `${key}: query parameter ${String(param.name)} removed or renamed (a query parameter the operation does not define is refused with 400)`);
}

/** Every schema of the operation in both documents: parameters and request bodies (inRequest), response bodies. */
function eachSchemaPair({ key, released, current, was, op }: Pair, visit: (a: Json, b: Json, where: string, inRequest: boolean) => void): void {
  const paramsAfter = parametersOf(current, key, op);
  for (const [name, param] of parametersOf(released, key, was)) {
    const still = paramsAfter.get(name);
    if (still) walkPair(released, current, param.schema, still.schema, `${key}: ${name}`, (a, b, where) => visit(a, b, where, true));
  }
  const bodyAfter = requestContent(current, op);
  for (const [type, media] of Object.entries(requestContent(released, was))) {
    if (bodyAfter[type]) walkPair(released, current, media.schema, bodyAfter[type].schema, `${key}: request body (${type})`, (a, b, where) => visit(a, b, where, true));
  }
  const responsesAfter = responsesOf(current, op);
  for (const [status, response] of responsesOf(released, was)) {
    const contentAfter = contentOf(responsesAfter.get(status));
    for (const [type, media] of Object.entries(contentOf(response))) {
      if (contentAfter[type]) walkPair(released, current, media.schema, contentAfter[type].schema, `${key}: response ${status} (${type})`, (a, b, where) => visit(a, b, where, false));
    }
  }
}

const INTEGER_RANGE: Record<string, [number, number]> = { int32: [-(2 ** 31), 2 ** 31 - 1], int64: [-(2 ** 63), 2 ** 63 - 1] };
/** An integer format added where minimum and maximum already kept the values in its range refuses nothing new. */
const alreadyInRange = (schema: Json, format: string): boolean => {
  const range = INTEGER_RANGE[format];
  return !!range && typeof schema.minimum === 'number' && typeof schema.maximum === 'number' && schema.minimum >= range[0] && schema.maximum <= range[1];
};

/**
 * A format is a type: generated SDKs map int32 and int64 (float, double, uuid, date-time...) to
 * different types, so a changed format breaks code built on the old one, whichever way it
 * goes (int64 -> int32 also refuses request values, int32 -> int64 sends response values an
 * int32 cannot hold). A format added narrows a request's values (unless an integer's limits
 * already kept them in range); one removed widens a response's. The other two directions pass.
 */
function formatChanged(pair: Pair): string[] {
  const out: string[] = [];
  eachSchemaPair(pair, (a, b, where, inRequest) => {
    const [was, is] = [a.format, b.format];
    if (was === is) return;
    if (typeof was === 'string' && typeof is === 'string') out.push(`${where}: format ${was} -> ${is}`);
    else if (inRequest && typeof is === 'string' && !alreadyInRange(b, is)) out.push(`${where}: format ${is} added (refuses request values that passed)`);
    else if (!inRequest && typeof was === 'string' && is === undefined) out.push(`${where}: format ${was} removed (responses may hold values outside it)`);
  });
  return out;
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

/** Each constraint of a request parameter or body made tighter: for review, not a failure. */
function tighterRequest(pair: Pair): string[] {
  const out: string[] = [];
  eachSchemaPair(pair, (a, b, where, inRequest) => {
    if (!inRequest) return;
    for (const [keyword, tighter] of Object.entries(TIGHTER)) {
      const was = a[keyword];
      const is = b[keyword];
      if (typeof is === 'number' && (typeof was !== 'number' || tighter(was, is))) out.push(`${where}: ${keyword} ${was ?? 'none'} -> ${is}`);
    }
    if (typeof b.pattern === 'string' && b.pattern !== a.pattern) out.push(`${where}: pattern ${a.pattern === undefined ? 'added' : 'changed'}`);
  });
  return out;
}

/**
 * Enums the current document declares open (x-extensible-enum: true) may gain values: Optic
 * is shown the released enum with the new values already in, so that it still judges removals
 * (a request value refused). Values added to an enum the released document did not declare
 * open are listed for review.
 */
function openEnums(released: Json, current: Json, notes: string[], warnings: string[]): void {
  const visit = (node: unknown, was: unknown, pointer: string): void => {
    if (!node || typeof node !== 'object' || !was || typeof was !== 'object') return;
    const [now, then] = [node as Json, was as Json];
    if (now['x-extensible-enum'] === true && Array.isArray(now.enum) && Array.isArray(then.enum)) {
      const added = now.enum.filter((value) => !(then.enum as unknown[]).includes(value));
      if (added.length > 0) {
        const values = added.map((value) => `'${String(value)}'`).join(', ');
        notes.push(`open enum ${pointer}: ${values} added (x-extensible-enum)`);
        if (then['x-extensible-enum'] !== true) warnings.push(`${pointer}: values ${values} added to an enum declared open (x-extensible-enum) only now`);
        then.enum = [...then.enum, ...added];
      }
    }
    for (const [name, child] of Object.entries(now)) visit(child, then[name], `${pointer}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  };
  visit(current, released, '#');
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

/** Walks a schema in both documents side by side ($refs followed, each pair once), calling visit on each level. */
function walkPair(
  releasedDoc: Json,
  currentDoc: Json,
  before: unknown,
  after: unknown,
  where: string,
  visit: (a: Json, b: Json, where: string) => void,
  seen = new Set<string>(),
): void {
  if (!before || !after || typeof before !== 'object' || typeof after !== 'object') return;
  const pair = `${(before as Json).$ref ?? ''}|${(after as Json).$ref ?? ''}`;
  if (pair !== '|') {
    if (seen.has(pair)) return;
    seen = new Set(seen).add(pair);
  }
  const a = resolveRef(releasedDoc, before as Json);
  const b = resolveRef(currentDoc, after as Json);
  visit(a, b, where);
  const walk = (x: unknown, y: unknown, at: string) => walkPair(releasedDoc, currentDoc, x, y, at, visit, seen);
  const propsBefore = (a.properties ?? {}) as Json;
  const propsAfter = (b.properties ?? {}) as Json;
  for (const name of Object.keys(propsBefore)) if (name in propsAfter) walk(propsBefore[name], propsAfter[name], `${where} ${name}`);
  walk(a.items, b.items, `${where}[]`);
  walk(a.additionalProperties, b.additionalProperties, `${where}{}`);
  for (const combiner of ['allOf', 'oneOf', 'anyOf']) {
    const listBefore = (a[combiner] ?? []) as unknown[];
    const listAfter = (b[combiner] ?? []) as unknown[];
    listBefore.forEach((sub, i) => walk(sub, listAfter[i], `${where} (${combiner} ${i})`));
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
      ...prepared.notes.map((note) => `  ${note}`),
      ...prepared.problems.map((problem) => `x ${problem}`),
      ...prepared.warnings.map((warning) => `! for review, not a failure: ${warning}`),
    ];
    if (prepared.warnings.length > 0) {
      lines.push(
        '  (a tighter request constraint keeps the promise only if the service already enforced it; values added to an enum declared open only now reach clients told it was closed)',
      );
    }
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
