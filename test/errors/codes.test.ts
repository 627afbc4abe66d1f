import { describe, expect, it } from 'vitest';
import { errorStatuses } from '../../src/errors/apiError.js';
import { doc } from '../helpers/schema.js';

const errorCode = doc.components.schemas.ErrorCode;

/** Rows of the `| code | status | meaning |` table in ErrorCode's description. */
function documentedStatuses(): Record<string, number> {
  const rows = [...String(errorCode.description).matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)];
  return Object.fromEntries(rows.map((m) => [m[1]!, Number(m[2])]));
}

describe('error codes', () => {
  it('are the ErrorCode enum of openapi.yaml, each with the status its table documents', () => {
    expect(Object.keys(errorStatuses).sort()).toEqual([...errorCode.enum].sort());
    expect(errorStatuses).toEqual(documentedStatuses());
  });

  it('have a status that is a documented response of some operation, or is answered outside operations', () => {
    const answeredOutsideOperations = new Set([405, 408, 417, 431, 501]); // router and HTTP layer; in ErrorCode and docs/API-BEHAVIOUR.md's Errors
    const documented = new Set<number>();
    for (const item of Object.values<any>(doc.paths)) {
      for (const op of Object.values<any>(item)) for (const status of Object.keys(op.responses ?? {})) documented.add(Number(status));
    }
    for (const [code, status] of Object.entries(errorStatuses)) {
      expect(documented.has(status) || answeredOutsideOperations.has(status), `${code} (${status})`).toBe(true);
    }
  });
});

describe('the document', () => {
  it('offers the same statuses to filter by as a pet can have (the filter has no default, so it spells them out)', () => {
    expect(doc.components.parameters.StatusFilter.schema.enum).toEqual(doc.components.schemas.PetStatus.enum);
  });

  it('offers the same statuses to filter orders by as an order can have', () => {
    expect(doc.components.parameters.OrderStatusFilter.schema.enum).toEqual(doc.components.schemas.OrderStatus.enum);
  });
});
