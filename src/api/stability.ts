import type { OperationObject } from '../openapi/document.js';

/** The `x-badges` name that marks an operation experimental (Redocly's convention; see Stability in openapi.yaml). */
const EXPERIMENTAL_BADGE = 'Experimental';

/** `API-Stability: experimental` on every response of an operation the document marks experimental; nothing for a stable one. */
export function stabilityHeaders(operation: OperationObject): Record<string, string> {
  const experimental = (operation['x-badges'] ?? []).some((badge) => badge.name === EXPERIMENTAL_BADGE);
  return experimental ? { 'api-stability': 'experimental' } : {};
}
