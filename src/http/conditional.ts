import { hash } from 'node:crypto';

/** Entity tags and the conditional request headers that carry them (RFC 9110 §8.8.3, §13.1). */

/** The tags of an If-Match / If-None-Match list; `*` alone as is. Quoted strings may not contain commas, so a split is exact. */
const tagsOf = (header: string) => header.split(',').map((tag) => tag.trim());
/** Weak comparison ignores the W/ prefix (§8.8.3.2). */
const opaque = (tag: string) => (tag.startsWith('W/') ? tag.slice(2) : tag);

/** A strong tag for a version of one resource. */
export const strongEtag = (version: number) => `"${version}"`;

/** A weak tag of a representation's bytes (a page whose content is the same has the same tag). */
export const weakEtag = (body: string) => `W/"${hash('sha1', body, 'base64url')}"`;

/** If-Match's tags as a write function compares them with the resource's strong tag (migration 018): null when absent. */
export const ifMatchTags = (header: string | undefined): string[] | null => (header === undefined ? null : tagsOf(header));

/** If-None-Match (§13.1.2) for GET: true when `current` is among the tags (weak comparison), so the answer is 304. */
export function noneMatchFails(header: string | undefined, current: string): boolean {
  if (header === undefined) return false;
  const tags = tagsOf(header);
  return tags.includes('*') || tags.some((tag) => opaque(tag) === opaque(current));
}
