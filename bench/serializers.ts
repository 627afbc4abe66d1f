/**
 * A listPets page (20 pets) written by fast-json-stringify from the document's schema (what
 * Fastify compiles by default) and by JSON.stringify (what the API uses, api/plugin.ts): CPU
 * and bytes allocated per page, medians of paired rounds in this process.
 */
import v8 from 'node:v8';
import build from 'fast-json-stringify';
import { loadDocument } from '../src/openapi/document.js';
import { median } from './stats.js';

const doc = loadDocument();
const { schemas } = (doc as unknown as { components: { schemas: Record<string, object> } }).components;
// listPets' 200 body, with the document's schemas beside it so that its $ref resolves.
const serializer = build({ type: 'array', items: { $ref: '#/components/schemas/Pet' }, components: { schemas } } as never);
const page = Array.from({ length: 20 }, (_, i) => ({ id: 1000 + i, name: `Pet ${i}`, categoryId: 1 + (i % 5), status: 'available' }));

/** Bytes allocated on the JS heap while `fn` runs `n` times, from V8's GC records. */
function measure(fn: () => string, n: number): { ns: number; bytes: number } {
  const profiler = new v8.GCProfiler();
  profiler.start();
  const used = v8.getHeapStatistics().used_heap_size;
  const t0 = process.hrtime.bigint();
  let length = 0;
  for (let i = 0; i < n; i++) length += fn().length;
  const ns = Number(process.hrtime.bigint() - t0) / n;
  let freed = 0;
  for (const gc of profiler.stop().statistics) freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  if (length === 0) throw new Error('nothing written');
  return { ns, bytes: (freed + v8.getHeapStatistics().used_heap_size - used) / n };
}

export function compareSerializers(rounds = 5, n = 200_000) {
  const arms = { 'fast-json-stringify (the schema)': () => serializer(page), 'JSON.stringify': () => JSON.stringify(page) };
  if (arms['JSON.stringify']() !== arms['fast-json-stringify (the schema)']()) throw new Error('the two serializers disagree');
  const results = new Map(Object.keys(arms).map((name) => [name, [] as Array<{ ns: number; bytes: number }>]));
  for (const [, fn] of Object.entries(arms)) measure(fn, n); // warm-up
  for (let r = 0; r < rounds; r++) {
    const names = Object.keys(arms);
    for (const name of r % 2 ? names.reverse() : names) results.get(name)!.push(measure(arms[name as keyof typeof arms], n));
  }
  return [...results].map(([name, ms]) => ({ name, ns: median(ms.map((m) => m.ns)), bytes: median(ms.map((m) => m.bytes)) }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of compareSerializers()) process.stdout.write(`${r.name.padEnd(34)} ${r.ns.toFixed(0).padStart(6)} ns  ${r.bytes.toFixed(0).padStart(6)} bytes per page\n`);
}
