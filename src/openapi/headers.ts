import { methodsOf, resolveRef, type OpenApiDocument } from './document.js';

/** Header names once each, compared case-insensitively (HTTP field names are), first spelling kept, sorted. */
export function distinctNames(names: Iterable<string>): string[] {
  const byLower = new Map<string, string>();
  for (const name of names) if (!byLower.has(name.toLowerCase())) byLower.set(name.toLowerCase(), name);
  return [...byLower.values()].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
}

/** The request headers the document declares as parameters (`in: header`), of path items and operations. */
export function headerParameterNames(doc: OpenApiDocument): string[] {
  const names: string[] = [];
  for (const item of Object.values(doc.paths)) {
    const operations = methodsOf(item).map((m) => item[m]!);
    for (const parameters of [(item as Record<string, unknown>).parameters, ...operations.map((op) => op.parameters)]) {
      for (const p of (parameters ?? []) as unknown[]) {
        const parameter = resolveRef(doc, p);
        if (parameter.in === 'header') names.push(parameter.name as string);
      }
    }
  }
  return distinctNames(names);
}

/** The response headers the document declares: the union over every response of every operation. */
export function responseHeaderNames(doc: OpenApiDocument): string[] {
  const names: string[] = [];
  for (const item of Object.values(doc.paths)) {
    for (const method of methodsOf(item)) {
      for (const response of Object.values(item[method]!.responses ?? {})) {
        names.push(...Object.keys(resolveRef(doc, response).headers ?? {}));
      }
    }
  }
  return distinctNames(names);
}
