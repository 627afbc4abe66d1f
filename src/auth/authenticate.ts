import type { FastifyRequest } from 'fastify';
import { invalidApiKey, missingApiKey } from '../http/errors.js';

/**
 * The check for operations secured by bearerAuth. It runs at onRequest, after the
 * caller was identified and before the body is read or validated, so an
 * unauthenticated request gets 401 whatever else is wrong with it.
 */
export async function requireApiKey(request: FastifyRequest): Promise<void> {
  if (request.apiKey) return;
  throw request.credentials === 'invalid' ? invalidApiKey() : missingApiKey();
}
