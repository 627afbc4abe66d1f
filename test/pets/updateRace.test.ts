import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, patchPet, petRow, petView, tally } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Two writers holding the same ETag: exactly one change lands, the other is told it is stale. */
let server: TestServer;
beforeAll(async () => {
  // Racing requests queue for connections: a long wait, so none is answered 503 overloaded instead.
  server = await startTestServer({ DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' });
});
afterAll(() => server.close());

describe('concurrent updatePet with the same If-Match', () => {
  it('10 rounds of two PATCHes with different names: exactly one 200 and one 412 each time, the winner’s name kept', async () => {
    for (let round = 0; round < 10; round++) {
      const { id, etag } = await createPet(server, { name: `Round ${round}` });
      const names = [`Left ${round}`, `Right ${round}`];
      const answers = await Promise.all(names.map((name) => patchPet(server, id, { name }, { headers: { 'if-match': etag } })));
      expect(tally(answers), `round ${round}`).toEqual({ '200': 1, '412 precondition_failed': 1 });
      const winner = answers.find((a) => a.status === 200)!;
      expect(names).toContain(winner.body.name);
      expect(await petView(server, id)).toEqual({ status: 200, body: winner.body, etag: winner.headers.get('etag') });
      expect(await petRow(server, id)).toEqual({ name: winner.body.name, status: 'available', version: 2, deleted: false });
    }
    await expectStatusesAgree(server.app.database.pool);
  });

  it('8 PATCHes at once with the same If-Match on one pet: exactly one 200, seven 412', async () => {
    const { id, etag } = await createPet(server, { name: 'Crowded' });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => patchPet(server, id, { name: `Writer ${i}`, categoryId: 10 + i }, { headers: { 'if-match': etag } })),
    );
    expect(tally(answers)).toEqual({ '200': 1, '412 precondition_failed': 7 });
    const winner = answers.find((a) => a.status === 200)!;
    expect((await petView(server, id)).body).toEqual(winner.body);
    expect((await petRow(server, id))!.version).toBe(2);
  });
});
