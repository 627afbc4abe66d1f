import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { components } from '../../generated/openapi.js';
import { openapiPath } from '../paths.js';

/** The parts of an OpenAPI 3.0 document this service reads. */
export interface OperationObject {
  operationId: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  /**
   * On a deprecated operation: since when, its removal (sunset) and its successor. On a beta one,
   * the notice of a breaking change: since when, when it takes effect (sunset) and what changes.
   */
  'x-deprecation'?: { since: string; sunset: string; successor?: string; description?: string };
  /** Redocly's badges; one named `Experimental` or `Beta` marks the operation's stability (api/routes.ts). */
  'x-badges'?: Array<{ name: string; color?: string; position?: 'before' | 'after' }>;
  [key: string]: unknown;
}

export interface OpenApiDocument {
  openapi: string;
  security?: Array<Record<string, string[]>>;
  servers?: Array<{ url: string; description?: string }>;
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, { enum?: unknown[]; [key: string]: unknown }> };
  [key: string]: unknown;
}

export interface OperationEntry {
  method: string;
  path: string;
  operation: OperationObject;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** The last text of openapi.yaml parsed, and what it parsed to (parsing takes ~0.1 s; each app of a test run loads it). */
let parsed: { text: string; doc: OpenApiDocument } | undefined;

/** Reads openapi.yaml, the single source of truth: a copy of its own for each caller (a caller may change it), parsed again only if the file changed. */
export function loadDocument(): OpenApiDocument {
  const text = readFileSync(openapiPath, 'utf8');
  if (parsed?.text !== text) parsed = { text, doc: parse(text) as OpenApiDocument };
  return structuredClone(parsed.doc);
}

/** The path prefix of the API (`/v1`): the path of the document's first server URL (every server shares it). */
export function apiBasePath(doc: OpenApiDocument): string {
  const url = doc.servers?.[0]?.url;
  if (!url) throw new Error('openapi.yaml has no servers: the API base path comes from servers[0].url');
  return new URL(url).pathname.replace(/\/+$/, '');
}

type Schemas = components['schemas'];

/**
 * The values of one of the document's string enums (`Plan`), in its order, read from the document
 * at run time; their type is generated/openapi.ts's (npm run generate writes both from openapi.yaml).
 */
export function enumValues<K extends keyof Schemas>(doc: OpenApiDocument, name: K): Array<Extract<Schemas[K], string>> {
  const values = doc.components?.schemas?.[name]?.enum;
  if (!Array.isArray(values) || values.length === 0 || !values.every((v) => typeof v === 'string')) {
    throw new Error(`openapi.yaml: components.schemas.${name} is not an enum of strings`);
  }
  return values as Array<Extract<Schemas[K], string>>;
}

/** An operation's stability level (docs/API-BEHAVIOUR.md, Stability). */
export type Stability = 'stable' | 'beta' | 'experimental';

/** The level from the operation's Redocly `x-badges`, the one marker: `Experimental`, `Beta`, or none for stable. */
export function stabilityOf(operation: { 'x-badges'?: unknown }): Stability {
  const badges: unknown[] = Array.isArray(operation['x-badges']) ? operation['x-badges'] : [];
  const names = new Set(badges.map((badge) => (badge as { name?: unknown } | null)?.name));
  return names.has('Experimental') ? 'experimental' : names.has('Beta') ? 'beta' : 'stable';
}

/** An OpenAPI path template (`/pets/{petId}`) as a Fastify route path (`/pets/:petId`). */
export const toRoutePath = (template: string) => template.replace(/\{(\w+)\}/g, ':$1');

/** Every operation of the document, keyed by operationId. */
export function operationsById(doc: OpenApiDocument): Map<string, OperationEntry> {
  const result = new Map<string, OperationEntry>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of methodsOf(item)) result.set(item[method]!.operationId, { method, path, operation: item[method]! });
  }
  return result;
}

/** The HTTP methods a path item of the document has operations for, in the document's order (lower case). */
export function methodsOf(item: Record<string, unknown>): string[] {
  return Object.keys(item).filter((key) => HTTP_METHODS.has(key));
}

/**
 * The methods a path of the document answers (upper case, the document's order): its
 * operations' methods, and HEAD wherever GET is (api/routes.ts exposes a HEAD route for
 * each GET). `Allow` on a 405 and CORS's allowed methods both come from here.
 */
export function allowedMethods(item: Record<string, unknown>): string[] {
  return methodsOf(item).flatMap((m) => (m === 'get' ? ['GET', 'HEAD'] : [m.toUpperCase()]));
}

/**
 * The names of the query parameters an operation defines (its own and its path's, `$ref`s to
 * components.parameters followed): any other query parameter is refused (api/routes.ts).
 */
export function queryParameterNames(doc: OpenApiDocument, entry: OperationEntry): Set<string> {
  const item = doc.paths[entry.path] as { parameters?: unknown[] } | undefined;
  const parameters = [...(item?.parameters ?? []), ...((entry.operation.parameters as unknown[] | undefined) ?? [])];
  const names = new Set<string>();
  for (const parameter of parameters) {
    const resolved = resolveRef(doc, parameter) as { name?: string; in?: string };
    if (resolved.in === 'query' && resolved.name) names.add(resolved.name);
  }
  return names;
}

/** A local `$ref` (`#/components/...`) followed to what it names; anything else as it is. */
export function resolveRef(doc: OpenApiDocument, value: unknown): Record<string, unknown> {
  let node = value as Record<string, unknown>;
  for (let hops = 0; typeof node?.$ref === 'string'; hops++) {
    const ref = node.$ref as string;
    if (!ref.startsWith('#/') || hops > 16) throw new Error(`openapi.yaml: cannot follow $ref ${ref}`);
    node = ref
      .slice(2)
      .split('/')
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<any>((at, part) => at?.[part], doc);
    if (node === undefined) throw new Error(`openapi.yaml: $ref ${ref} names nothing`);
  }
  return node;
}
