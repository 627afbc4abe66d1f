import type { FastifyRequest } from 'fastify';
import type { ApiKeyIdentity } from '../repositories/apiKeys.js';
import { parseAuthorization } from './apiKey.js';
import type { KeyVerifier } from './keyVerifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key behind the request, when it carried a valid one. */
    apiKey?: ApiKeyIdentity;
    /** What the Authorization header held: nothing usable, a bad key, or a valid key. */
    credentials?: 'missing' | 'invalid' | 'valid';
  }
}

/** Works out who is calling, without deciding whether that is enough: the operation's security does that. */
export async function identify(request: FastifyRequest, verifier: KeyVerifier): Promise<void> {
  const parsed = parseAuthorization(request.headers.authorization);
  if (parsed.kind === 'missing') {
    request.credentials = 'missing';
    return;
  }
  request.credentials = 'invalid'; // until proven otherwise, also if the lookup fails
  if (parsed.kind !== 'key') return;
  const identity = await verifier.verify(parsed.key);
  if (identity) {
    request.apiKey = identity;
    request.credentials = 'valid';
  }
}
