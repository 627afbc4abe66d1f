import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { loadDocument } from '../../src/openapi/document.js';

/** openapi.yaml as the tests read it: the same file the service is built from. */
export const doc = loadDocument() as any;

/** Follows local `$ref`s until a node that is not a reference. */
export function resolve<T = any>(node: any): T {
  while (node && typeof node.$ref === 'string') {
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((acc: any, key: string) => acc[key], doc);
  }
  return node;
}

/** A copy of `node` with every `$ref` replaced by its target (the document has no cycles). */
export function deref(node: any): any {
  if (Array.isArray(node)) return node.map(deref);
  if (node && typeof node === 'object') {
    const target = resolve(node);
    return Object.fromEntries(Object.entries(target).map(([k, v]) => [k, deref(v)]));
  }
  return node;
}

/** A schema of `components/schemas`, dereferenced. */
export function componentSchema(name: string): any {
  return deref(doc.components.schemas[name]);
}

/** The schema of a parameter of `components/parameters`, dereferenced. */
export function parameterSchema(name: string): any {
  return deref(doc.components.parameters[name].schema);
}

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);
const compiled = new Map<string, ReturnType<typeof ajv.compile>>();

/** A cached ajv validator for a schema of the document, keyed by the caller. */
export function validatorFor(key: string, schema: any) {
  let v = compiled.get(key);
  if (!v) {
    v = ajv.compile(deref(schema));
    compiled.set(key, v);
  }
  return v;
}
