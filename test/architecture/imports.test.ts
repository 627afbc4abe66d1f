import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The rooms of src/ and the arrows between them (docs/ARCHITECTURE.md, "Rooms"), read from the
 * source: every relative `from '...'` (and `import '...'`, `import('...')`) of every src/**\/*.ts.
 */

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Folders that hold what the service does: each one a resource of the API and its rules. */
const CAPABILITIES = ['accounts', 'pets', 'orders', 'events', 'webhooks'];
/**
 * Folders that hold how it runs: none of them imports a capability. api/ is in two parts: its
 * request gate, routes and body checks are infrastructure; api/plugin.ts is where the capabilities'
 * handlers meet the routes (a composition file, like app.ts).
 */
const INFRASTRUCTURE = ['auth', 'ratelimit', 'metrics', 'api', 'db', 'http', 'errors', 'logging', 'tracing', 'jobs', 'pagination', 'idempotency', 'openapi', 'process'];
/** Files that compose capabilities with infrastructure: the only ones outside capability folders that may import them. */
const COMPOSITION = ['app.ts', 'api/plugin.ts'];
/** What config.ts may import under src/: leaf modules that themselves import nothing from the rooms. */
const CONFIG_LEAVES = ['startupError.ts', 'configParts/redisUrl.ts', 'configParts/quota.ts'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Each src file (relative to src/, '/' separated) with the src files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const resolved = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, '.ts');
      targets.push(path.relative(SRC, resolved).split(path.sep).join('/'));
    }
    graph.set(path.relative(SRC, file).split(path.sep).join('/'), targets);
  }
  return graph;
}

/** The top folder of a src file, or undefined for a file directly in src/. */
const folder = (file: string): string | undefined => (file.includes('/') ? file.split('/')[0] : undefined);

/** Strongly connected components of more than one folder (Tarjan): folders that reach each other through imports. */
function knotsOf(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const knots: string[][] = [];
  const connect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const knot: string[] = [];
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      knot.push(member);
      if (member === node) break;
    }
    if (knot.length > 1) knots.push(knot.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) connect(node);
  return knots;
}

const graph = importGraph();
const arrows = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));

describe('imports between the rooms of src/', () => {
  it('reads a graph worth checking', () => {
    expect(graph.size).toBeGreaterThan(50);
    expect(arrows.length).toBeGreaterThan(100);
    for (const room of [...CAPABILITIES, ...INFRASTRUCTURE]) expect([...graph.keys()].some((f) => folder(f) === room), room).toBe(true);
  });

  it('no infrastructure file imports a capability folder', () => {
    const wrong = arrows.filter(
      ({ from, to }) => INFRASTRUCTURE.includes(folder(from) ?? '') && !COMPOSITION.includes(from) && CAPABILITIES.includes(folder(to) ?? ''),
    );
    expect(wrong.map(({ from, to }) => `${from} → ${to}`)).toEqual([]);
  });

  it('jobs/ imports nothing from webhooks/, orders/ or events/', () => {
    const wrong = arrows.filter(({ from, to }) => folder(from) === 'jobs' && ['webhooks', 'orders', 'events'].includes(folder(to) ?? ''));
    expect(wrong.map(({ from, to }) => `${from} → ${to}`)).toEqual([]);
  });

  it('config.ts imports only its leaf modules, and they import nothing under src/', () => {
    const wrong = graph.get('config.ts')!.filter((to) => !CONFIG_LEAVES.includes(to));
    expect(wrong).toEqual([]);
    for (const leaf of CONFIG_LEAVES) expect(graph.get(leaf), leaf).toEqual([]);
  });

  it('no import cycle between folders (the finder itself finds a planted one)', () => {
    const edges = new Map<string, Set<string>>();
    for (const { from, to } of arrows) {
      const a = folder(from);
      const b = folder(to);
      if (!a || !b || a === b || COMPOSITION.includes(from)) continue;
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)!.add(b);
    }
    expect(edges.size).toBeGreaterThan(10);
    expect(knotsOf(new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a', 'd'])], ['d', new Set<string>()]]))).toEqual([['a', 'b', 'c']]);
    expect(knotsOf(edges)).toEqual([]);
  });

  it('errors/ sits beneath the request edge: it imports neither http/ nor ratelimit/', () => {
    const wrong = arrows.filter(({ from, to }) => folder(from) === 'errors' && ['http', 'ratelimit'].includes(folder(to) ?? ''));
    expect(wrong.map(({ from, to }) => `${from} → ${to}`)).toEqual([]);
  });
});
