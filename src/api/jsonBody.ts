import type { FastifyInstance, FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { errors } from '../errors/apiError.js';
import { BODY_LIMIT, MAX_JSON_DEPTH } from '../limits.js';
import { firstBadString } from './bodyStrings.js';
import { jsonTextShape } from './jsonText.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The only body parser of the scope it is called on: JSON in UTF-8, not content-encoded, as
 * application/json or application/merge-patch+json (RFC 7396). Any other media type has no
 * parser, so Fastify answers 415; which of the two an operation takes, api/routes.ts checks.
 */
export function registerJsonBody(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, async (request: FastifyRequest, raw: Buffer) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1];
    if (charset && !/^utf-?8$/i.test(charset)) throw errors.unsupported_media_type(`Charset ${charset} is not supported; send UTF-8.`);
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      // RFC 9110 §15.5.16: a content coding the server does not accept is a 415.
      throw errors.unsupported_media_type(`Content-Encoding ${encoding} is not supported; send the body uncompressed.`);
    }
    let text: string;
    try {
      text = utf8.decode(raw);
    } catch {
      throw errors.invalid_json('Body is not valid UTF-8.');
    }
    const shape = jsonTextShape(text);
    if (shape.depth > MAX_JSON_DEPTH) throw errors.invalid_json(`Body nests deeper than ${MAX_JSON_DEPTH} levels.`);
    if (shape.roundedNumber !== undefined) {
      throw errors.validation_failed(`body holds the number ${shape.roundedNumber.slice(0, 40)}, which cannot be represented exactly`);
    }
    let body: unknown;
    try {
      // Rejects __proto__ and constructor.prototype keys instead of letting them reach objects.
      body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      throw errors.invalid_json(`Body is not valid JSON: ${(err as Error).message}`);
    }
    const bad = firstBadString(body);
    // Unpaired surrogates cannot be stored as UTF-8: refused rather than stored as U+FFFD.
    if (bad?.problem === 'surrogate') throw errors.invalid_json('Body contains a string with an unpaired UTF-16 surrogate.');
    // Control and bidirectional characters (bodyStrings.ts): refused here for every field, named as ajv names one.
    if (bad) throw errors.validation_failed(`body${bad.at}${bad.key ? ' has a property name that contains' : ' must not contain'} ${bad.char}`);
    return body;
  });
}
