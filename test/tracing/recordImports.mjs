// Loaded with `node --import` ahead of tsx: appends the URL of every module resolved through
// the ESM loader to the file named by IMPORT_LOG, so a test can tell what a process imported.
// (require() calls inside CommonJS packages are not seen; every import of this repo's code is.)
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(${JSON.stringify(process.env.IMPORT_LOG)}, result.url + '\\n');
  return result;
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
