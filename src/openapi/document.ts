import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { openapiPath } from '../paths.js';

/** The parts of an OpenAPI 3.0 document this service reads. */
export interface OperationObject {
  operationId: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  'x-deprecation'?: { since: string; sunset: string; successor: string };
  [key: string]: unknown;
}

export interface OpenApiDocument {
  openapi: string;
  security?: Array<Record<string, string[]>>;
  servers?: Array<{ url: string; description?: string; variables?: unknown }>;
  paths: Record<string, Record<string, OperationObject>>;
  [key: string]: unknown;
}

export interface OperationEntry {
  method: string;
  path: string;
  operation: OperationObject;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** Reads openapi.yaml, the single source of truth, once. */
export function loadDocument(file = openapiPath): OpenApiDocument {
  return parse(readFileSync(file, 'utf8')) as OpenApiDocument;
}

/** Every operation of the document, keyed by operationId. */
export function operationsById(doc: OpenApiDocument): Map<string, OperationEntry> {
  const result = new Map<string, OperationEntry>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (HTTP_METHODS.has(method)) result.set(operation.operationId, { method, path, operation });
    }
  }
  return result;
}
