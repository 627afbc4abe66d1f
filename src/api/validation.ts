import type { ErrorObject } from 'ajv';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';

// OpenAPI keywords that are documentation, not validation; declared so ajv's strict mode accepts them.
const OPENAPI_KEYWORDS = ['example', 'x-deprecation'];

function makeAjv(coerceTypes: false | 'array') {
  const ajv = new Ajv({
    coerceTypes,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false, // stop at the first error: cheaper, and no regex runs on an over-long string
    keywords: OPENAPI_KEYWORDS,
  });
  addFormats.default(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly (no coercion: "7" is not 7); query strings, path
 * parameters and headers arrive as text, so there numbers are coerced from strings.
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = makeAjv(false);
  const coercing = makeAjv('array');
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
    if (httpPart === 'body') return strict.compile(schema as object);
    if (httpPart === 'headers') return coercing.compile(lowerCaseHeaders(schema as HeaderSchema));
    return coercing.compile(schema as object);
  };
  app.setValidatorCompiler(compiler);
  app.setSchemaErrorFormatter((errors, dataVar) => new Error(errors.map((e) => describe(e, dataVar)).join('; ')));
}

interface HeaderSchema {
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

/** Node lowercases incoming header names; Fastify adjusts header schemas only for its own compiler, so we do it here. */
function lowerCaseHeaders(schema: HeaderSchema): HeaderSchema {
  return {
    ...schema,
    ...(schema.properties && {
      properties: Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k.toLowerCase(), v])),
    }),
    ...(schema.required && { required: schema.required.map((k) => k.toLowerCase()) }),
  };
}

/** A message that names the field, e.g. "body/categoryId must be integer". */
function describe(error: ErrorObject, dataVar: string): string {
  const at = `${dataVar}${error.instancePath}`;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return `${at}/${String(params.missingProperty)} is required`;
    case 'additionalProperties':
      return `${at}/${String(params.additionalProperty)} is not a known property`;
    case 'enum':
      return `${at} must be one of: ${(params.allowedValues as unknown[]).join(', ')}`;
    case 'pattern':
      return `${at} must contain a visible character and no control characters`;
    default:
      return `${at} ${error.message ?? 'is invalid'}`;
  }
}
