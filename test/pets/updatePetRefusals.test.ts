import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BODY_LIMIT } from '../../src/limits.js';
import { createPet, patchPet, petRow, petView } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Bad updatePet requests: each a 4xx in the Error shape, and the pet exactly as it was. */
let server: TestServer;
let petId: number;
let before: Awaited<ReturnType<typeof petView>>;
beforeAll(async () => {
  server = await startTestServer();
  petId = (await createPet(server, { name: 'Untouched', categoryId: 5 })).id;
  // At version 2, so a refused request that wrote anything would show in the tag or the row.
  expect((await patchPet(server, petId, { status: 'sold' })).status).toBe(200);
  before = await petView(server, petId);
  expect(before).toEqual({ status: 200, body: { id: petId, name: 'Untouched', categoryId: 5, status: 'sold' }, etag: '"2"' });
});
afterAll(() => server.close());

async function expectUnchanged() {
  expect(await petView(server, petId)).toEqual(before);
  expect(await petRow(server, petId)).toEqual({ name: 'Untouched', status: 'sold', version: 2, deleted: false });
}

const json = JSON.stringify;

describe('updatePet refuses, and changes nothing', () => {
  it.each([
    ['null name', json({ name: null }), /^body\/name /],
    ['null categoryId', json({ categoryId: null }), /^body\/categoryId /],
    ['null status', json({ status: null }), /^body\/status /],
    ['null beside a valid field', json({ name: 'Changed', status: null }), /^body\/status /],
    ['id', json({ id: 99 }), /^body\/id is not a known property$/],
    ['id equal to the pet’s own', 'ID', /^body\/id is not a known property$/],
    ['an unknown field', json({ colour: 'brown' }), /^body\/colour is not a known property$/],
    ['an unknown field beside a valid one', json({ name: 'Changed', colour: 'brown' }), /^body\/colour is not a known property$/],
    ['a number for name', json({ name: 7 }), /^body\/name must be string$/],
    ['an empty name', json({ name: '' }), /^body\/name /],
    ['a blank name', json({ name: '   ' }), /^body\/name must contain a visible character/],
    ['a string for categoryId', json({ categoryId: '7' }), /^body\/categoryId must be integer$/],
    ['a fraction for categoryId', json({ categoryId: 1.5 }), /^body\/categoryId must be integer$/],
    ['categoryId 0', json({ categoryId: 0 }), /^body\/categoryId must be >= 1$/],
    ['categoryId 2^53', json({ categoryId: 2 ** 53 }), /^body\/categoryId must be <= 9007199254740991$/],
    ['an unknown status', json({ status: 'adopted' }), /^body\/status must be one of: available, pending, sold$/],
    ['an array', json([{ name: 'Changed' }]), /^body must be object$/],
    ['a string', json('Changed'), /^body must be object$/],
  ])('400 validation_failed for %s', async (_, raw, message) => {
    const body = raw === 'ID' ? json({ id: petId }) : raw;
    const res = await patchPet(server, petId, body);
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
    await expectUnchanged();
  });

  it.each(['{"name": "Changed"', '{name: "Changed"}', "{'name':'Changed'}", '{"name": "Changed"} x'])('400 invalid_json for %s', async (raw) => {
    const res = await patchPet(server, petId, raw);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
    await expectUnchanged();
  });

  it('400 for a categoryId literal beyond int64 (validation_failed naming it) and for JSON nested too deep (invalid_json)', async () => {
    const big = await patchPet(server, petId, '{"categoryId": 99999999999999999999}');
    expect([big.status, big.body.code]).toEqual([400, 'validation_failed']);
    expect(big.body.message).toBe('body/categoryId must be <= 9007199254740991');
    const deep = await patchPet(server, petId, `{"name": ${'['.repeat(40)}${']'.repeat(40)}}`);
    expect([deep.status, deep.body.code]).toEqual([400, 'invalid_json']);
    await expectUnchanged();
  });

  it('400 invalid_json for an empty body sent as merge-patch+json', async () => {
    const res = await patchPet(server, petId, '');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
    await expectUnchanged();
  });

  it('400 validation_failed for no body at all', async () => {
    const res = await server.request(`/v1/pets/${petId}`, { method: 'PATCH' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    await expectUnchanged();
  });

  it.each([
    ['text/plain', 'name=Changed'],
    ['application/xml', '<pet><name>Changed</name></pet>'],
    ['application/x-www-form-urlencoded', 'name=Changed'],
    ['application/json-patch+json', json([{ op: 'replace', path: '/name', value: 'Changed' }])],
    // A JSON body whose media type is not JSON is refused too, not parsed anyway.
    ['text/plain', json({ name: 'Changed' })],
    ['application/merge-patch+json; charset=iso-8859-1', json({ name: 'Changed' })],
  ])('415 unsupported_media_type for %s', async (type, raw) => {
    const res = await patchPet(server, petId, raw, { headers: { 'content-type': type } });
    expect(res.status, res.text).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
    await expectUnchanged();
  });

  it('merge-patch+json is for updatePet only: createPet and placeOrder answer it 415 and store nothing', async () => {
    const pets = await server.petCount();
    const created = await server.request('/v1/pets', { body: { name: 'Patchy', categoryId: 1 }, headers: { 'content-type': 'application/merge-patch+json' } });
    expect([created.status, created.body.code]).toEqual([415, 'unsupported_media_type']);
    const ordered = await server.request('/v1/store/orders', { body: { petId }, headers: { 'content-type': 'application/merge-patch+json' } });
    expect([ordered.status, ordered.body.code]).toEqual([415, 'unsupported_media_type']);
    expect(await server.petCount()).toBe(pets);
    await expectUnchanged();
  });

  it('413 payload_too_large for a body over 64 KiB', async () => {
    const raw = json({ name: 'x'.repeat(BODY_LIMIT) });
    expect(raw.length).toBeGreaterThan(BODY_LIMIT);
    const res = await patchPet(server, petId, raw);
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    await expectUnchanged();
  });

  it.each(['abc', '0', '-1', '1.5', '9007199254740992', '99999999999999999999'])('400 validation_failed for petId %s', async (id) => {
    const res = await patchPet(server, id, { name: 'Changed' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(/^params\/petId /);
    await expectUnchanged();
  });
});
