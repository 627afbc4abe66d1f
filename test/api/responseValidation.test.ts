import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logCollector } from '../helpers/logCollector.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** A pet the database allows but openapi.yaml does not: a name of blanks (PetName needs a visible character). */
async function storeInvalidPet(server: TestServer): Promise<number> {
  const { rows } = await server.app.database.pool.query<{ id: number }>(
    `INSERT INTO pets (name, category_id, status) VALUES ('   ', 1, 'available') RETURNING id`,
  );
  return rows[0]!.id;
}

describe('RESPONSE_VALIDATION', () => {
  const { stream: logStream, lines } = logCollector();
  let checked: TestServer;
  let unchecked: TestServer;
  beforeAll(async () => {
    checked = await startTestServer({ RESPONSE_VALIDATION: 'true', LOG_LEVEL: 'error' }, { logStream });
    unchecked = await startTestServer({ RESPONSE_VALIDATION: 'false' });
  });
  afterAll(async () => {
    await checked?.close();
    await unchecked?.close();
  });

  it('turns a response that breaks openapi.yaml into a logged 500', async () => {
    const id = await storeInvalidPet(checked);
    const res = await fetch(`${checked.baseUrl}/v1/pets/${id}`, { headers: { authorization: `Bearer ${checked.key}` } });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ code: 'internal_error', message: 'Internal server error.', status: 500 });
    expect(lines.filter((l) => l.level === 50 && l.msg === 'unhandled error')).toHaveLength(1);
  });

  it('is off by default: the same response goes out as it is', async () => {
    const id = await storeInvalidPet(unchecked);
    const res = await fetch(`${unchecked.baseUrl}/v1/pets/${id}`, { headers: { authorization: `Bearer ${unchecked.key}` } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { name: string }).name).toBe('   ');
  });
});
