import type { FastifyInstance } from 'fastify';
import secureJson from 'secure-json-parse';
import { errors } from '../errors/apiError.js';
import { BODY_LIMIT, MAX_JSON_DEPTH } from '../limits.js';

/**
 * The only body parser of the scope it is called on: application/json in UTF-8. Any
 * other media type has no parser, so Fastify answers 415.
 */
export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (request, text, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) {
      done(errors.unsupported_media_type(`Charset ${charset} is not supported; send UTF-8.`), undefined);
      return;
    }
    if (nestingDepth(text as string) > MAX_JSON_DEPTH) {
      done(errors.invalid_json(`Body nests deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
      return;
    }
    let body: unknown;
    try {
      // Rejects __proto__ and constructor.prototype keys instead of letting them reach objects.
      body = secureJson.parse(text as string, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      done(errors.invalid_json(`Body is not valid JSON: ${(err as Error).message}`), undefined);
      return;
    }
    if (!allStringsWellFormed(body)) {
      done(errors.invalid_json('Body contains a string with an unpaired UTF-16 surrogate.'), undefined);
      return;
    }
    done(null, body);
  });
}

/** The deepest nesting of arrays and objects in JSON text, ignoring brackets inside strings. */
function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91 /* { [ */) max = Math.max(max, ++depth);
    else if (c === 125 || c === 93 /* } ] */) depth--;
  }
  return max;
}

/** Unpaired surrogates cannot be stored as UTF-8; reject them rather than store U+FFFD. */
function allStringsWellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (Array.isArray(value)) return value.every(allStringsWellFormed);
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).every(([k, v]) => k.isWellFormed() && allStringsWellFormed(v));
  }
  return true;
}
