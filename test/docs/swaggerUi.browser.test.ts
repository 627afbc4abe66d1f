import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Locator, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAVICON_FILENAME, FAVICON_SVG } from '../../src/docs/favicon.js';
import { projectRoot } from '../../src/paths.js';
import { launchChromium } from '../helpers/chromium.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { typedClient } from '../helpers/typedClient.js';

/**
 * Swagger UI in a real browser (Debian chromium driven by playwright-core): what a person
 * exploring the API does on first visit, with a real key, against a real server.
 * Screenshots of each answered operation land in test-artifacts/swagger-ui/ (kept by CI).
 */

const ARTIFACTS = path.join(projectRoot, 'test-artifacts', 'swagger-ui');
/** Every wait in this file is bounded by this (or less). */
const WAIT = 15_000;
/** The class of the "Authorize" button once a key is set ("unlocked" before). */
const LOCKED = /(^|\s)locked(\s|$)/;

/**
 * "Try it out" calls the first server of the served document, `PUBLIC_BASE_URL` + `/v1`,
 * which for a test server is its own address: the page and the API are one origin, as in a
 * deployment.
 */
let server: TestServer;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  await rm(ARTIFACTS, { recursive: true, force: true });
  await mkdir(ARTIFACTS, { recursive: true });
  server = await startTestServer();
  origin = server.baseUrl;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The tag each operation is listed under in openapi.yaml (Swagger UI groups, and names blocks, by it). */
const tagOf = (operationId: string) => (/Order/.test(operationId) ? 'orders' : /Account|ApiKey/.test(operationId) ? 'account' : 'pets');

/** An operation's block, found by operationId (Swagger UI's id is `operations-<tag>-<operationId>`). */
const operation = (page: Page, operationId: string) => page.locator(`#operations-${tagOf(operationId)}-${operationId}`);

/** Opens an operation and switches it to "Try it out". */
async function tryItOut(page: Page, operationId: string): Promise<Locator> {
  const block = operation(page, operationId);
  if (!(await block.locator('.opblock-body').isVisible())) await block.locator('.opblock-summary').first().click();
  const tryOut = block.locator('button.try-out__btn');
  await tryOut.waitFor({ timeout: WAIT });
  if ((await tryOut.textContent())?.trim() === 'Try it out') await tryOut.click();
  await block.locator('button.execute').waitFor({ timeout: WAIT });
  return block;
}

interface Answer {
  /** The status as Swagger UI shows it under "Server response". */
  status: string;
  /** The response body as Swagger UI shows it, parsed. */
  body: any;
  /** The request the browser sent for it. */
  request: Request;
}

/** Clicks "Execute", waits for the answer to show, and saves a screenshot of the operation. */
async function execute(page: Page, block: Locator, screenshot: string): Promise<Answer> {
  const [request] = await Promise.all([
    page.waitForRequest((r) => r.url().startsWith(`${origin}/v1/`), { timeout: WAIT }),
    block.locator('button.execute').click(),
  ]);
  const live = block.locator('.live-responses-table tbody .response');
  await live.waitFor({ timeout: WAIT });
  const status = (await live.locator('.response-col_status').textContent())?.trim() ?? '';
  const text = (await live.locator('.response-col_description pre').first().textContent()) ?? '';
  await shoot(page, block, block.locator('.live-responses-table'), screenshot);
  return { status, body: text ? JSON.parse(text) : undefined, request };
}

/**
 * Saves the operation from its summary line down to the "Server response" table (the
 * request sent and the answer shown), leaving out the long list of documented responses.
 */
async function shoot(page: Page, from: Locator, to: Locator, file: string) {
  await page.evaluate('window.scrollTo(0, 0)');
  const top = (await from.boundingBox({ timeout: WAIT }))!;
  const bottom = (await to.boundingBox({ timeout: WAIT }))!;
  const clip = { x: top.x, y: top.y, width: top.width, height: bottom.y + bottom.height - top.y + 8 };
  await page.screenshot({ path: path.join(ARTIFACTS, file), fullPage: true, clip, timeout: WAIT });
}

/** Swagger UI leaves the Execute answer of a block until cleared; a second run must show a new one. */
async function clear(block: Locator) {
  const button = block.locator('button.btn-clear');
  if (await button.isVisible()) await button.click();
  await block.locator('.live-responses-table').waitFor({ state: 'detached', timeout: WAIT });
}

describe('Swagger UI in a real browser', () => {
  it('GET / redirects to the documentation, outside the API', async () => {
    const res = await fetch(`${server.baseUrl}/`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/docs');
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    expect(res.headers.get('cache-control')).toBeNull();
  });

  it('works on first click: authorize (kept across a reload), list, create twice, get the deprecated operation, edit an animal, place and complete an order, create an API key', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.setDefaultNavigationTimeout(WAIT);
    try {
      // The bare address lands on the documentation.
      await page.goto(`${origin}/`);
      expect(new URL(page.url()).pathname).toBe('/docs');

      await page.goto(`${origin}/docs/`);
      await operation(page, 'listPets').waitFor({ timeout: WAIT });
      expect(await page.title()).toBe('Animal Store API');
      const icons = page.locator('link[rel="icon"]');
      expect(await icons.count()).toBe(1);
      const iconUrl = new URL((await icons.getAttribute('href'))!, page.url()).href;
      expect(iconUrl).toBe(`${origin}/docs/static/theme/${FAVICON_FILENAME}`);
      const icon = await page.request.get(iconUrl);
      expect(icon.status()).toBe(200);
      expect(icon.headers()['content-type']).toMatch(/^image\/svg\+xml/);
      expect(await icon.text()).toBe(FAVICON_SVG);

      // Authorize with a real key.
      const authorize = page.locator('.auth-wrapper button.authorize');
      expect(await authorize.getAttribute('class')).toContain('unlocked');
      await authorize.click();
      const dialog = page.locator('.dialog-ux .modal-ux');
      await dialog.locator('input#auth-bearer-value').fill(server.key);
      await dialog.locator('button.modal-btn.auth.authorize').click();
      await dialog.locator('text=Authorized').first().waitFor({ timeout: WAIT });
      await dialog.screenshot({ path: path.join(ARTIFACTS, '01-authorized.png'), timeout: WAIT });
      await dialog.locator('button.btn-done').click();
      await dialog.waitFor({ state: 'detached', timeout: WAIT });
      await expect.poll(() => authorize.getAttribute('class'), { timeout: WAIT }).toMatch(LOCKED);

      // A reload keeps it (persistAuthorization): the lock stays closed and requests carry the key.
      await page.reload();
      await operation(page, 'listPets').waitFor({ timeout: WAIT });
      await expect
        .poll(() => authorize.getAttribute('class'), { timeout: 5_000, message: 'authorization kept across the reload' })
        .toMatch(LOCKED);

      // listPets, nothing pre-filled but the documented default limit.
      const list = await tryItOut(page, 'listPets');
      expect(await list.locator('tr[data-param-name="cursor"] input').inputValue()).toBe('');
      expect(await list.locator('tr[data-param-name="status"] select').inputValue()).toBe('');
      expect(await list.locator('tr[data-param-name="categoryId"] input').inputValue()).toBe('');
      const listed = await execute(page, list, '02-listPets-200.png');
      expect(listed.status).toBe('200');
      expect(listed.body).toEqual([]);
      expect(listed.request.headers()['authorization']).toBe(`Bearer ${server.key}`);
      expect(new URL(listed.request.url()).search).not.toMatch(/cursor|status|categoryId/);

      // createPet twice with different bodies: two animals, no shared Idempotency-Key replaying or refusing.
      const create = await tryItOut(page, 'createPet');
      const idempotencyKey = create.locator('tr[data-param-name="Idempotency-Key"] input');
      expect(await idempotencyKey.inputValue()).toBe('');
      const bodies = [
        { name: 'Biscuit', categoryId: 3 },
        { name: 'Pepper', categoryId: 5, status: 'pending' },
      ];
      const created = [];
      for (const [i, body] of bodies.entries()) {
        if (i > 0) await clear(create);
        await create.locator('textarea.body-param__text').fill(JSON.stringify(body, null, 2));
        const answer = await execute(page, create, `0${3 + i}-createPet-201-${body.name}.png`);
        expect(answer.status, JSON.stringify(answer.body)).toBe('201');
        expect(answer.body).toMatchObject({ ...body, status: body.status ?? 'available' });
        expect(answer.request.headers()['idempotency-key']).toBeUndefined();
        expect(JSON.parse(answer.request.postData()!)).toEqual(body);
        created.push(answer.body);
      }
      expect(created[0].id).not.toBe(created[1].id);
      expect(await server.petCount()).toBe(2);

      // getPet, shown as deprecated, on the second animal.
      const get = operation(page, 'getPet');
      expect(await get.getAttribute('class')).toContain('opblock-deprecated');
      await tryItOut(page, 'getPet');
      await get.locator('text=Warning: Deprecated').waitFor({ timeout: WAIT });
      // If-None-Match not pre-filled: a tag there could make the answer a body-less 304.
      expect(await get.locator('tr[data-param-name="If-None-Match"] input').inputValue()).toBe('');
      await get.locator('tr[data-param-name="petId"] input').fill(String(created[1].id));
      const got = await execute(page, get, '05-getPet-200-deprecated.png');
      expect(got.status).toBe('200');
      expect(got.body).toEqual(created[1]);
      const response = await got.request.response();
      expect(response?.headers()['deprecation']).toMatch(/^@\d+$/);
      const etag = response?.headers()['etag'];
      expect(etag).toMatch(/^"\d+"$/);

      // Edit that animal: updatePet with the ETag getPet showed in If-Match, in the media type
      // Swagger UI offers first (openapi.yaml lists merge-patch before application/json).
      const update = await tryItOut(page, 'updatePet');
      await update.locator('tr[data-param-name="petId"] input').fill(String(created[1].id));
      // Not pre-filled: a tag of another version there answers 412.
      const ifMatch = update.locator('tr[data-param-name="If-Match"] input');
      expect(await ifMatch.inputValue()).toBe('');
      await ifMatch.fill(etag!);
      const mediaType = await update.locator('.opblock-section-request-body select').inputValue();
      expect(mediaType).toBe('application/merge-patch+json');
      await update.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'edited in swagger' }, null, 2));
      const edited = await execute(page, update, '06-updatePet-200.png');
      expect(edited.status, JSON.stringify(edited.body)).toBe('200');
      expect(edited.body).toEqual({ ...created[1], name: 'edited in swagger' });
      expect(edited.request.method()).toBe('PATCH');
      expect(edited.request.headers()['content-type']).toBe(mediaType);
      expect(edited.request.headers()['if-match']).toBe(etag);
      expect(JSON.parse(edited.request.postData()!)).toEqual({ name: 'edited in swagger' });
      const newEtag = (await edited.request.response())?.headers()['etag'];
      expect(newEtag).toMatch(/^"\d+"$/);
      expect(newEtag).not.toBe(etag);
      const renamed = await server.api.GET('/pets/{petId}', { params: { path: { petId: created[1].id } } });
      expect(renamed.data).toEqual({ ...created[1], name: 'edited in swagger' });
      expect(renamed.response.headers.get('etag')).toBe(newEtag);

      // The experimental adoption orders, marked so in the summary: order the first animal, then complete the order.
      for (const id of ['placeOrder', 'listOrders', 'getOrder', 'completeOrder', 'cancelOrder']) {
        expect(await operation(page, id).locator('.opblock-summary-description').textContent(), id).toMatch(/\(experimental\)$/);
      }
      const place = await tryItOut(page, 'placeOrder');
      expect(await place.locator('tr[data-param-name="Idempotency-Key"] input').inputValue()).toBe('');
      await place.locator('textarea.body-param__text').fill(JSON.stringify({ petId: created[0].id }, null, 2));
      const placed = await execute(page, place, '07-placeOrder-201.png');
      expect(placed.status, JSON.stringify(placed.body)).toBe('201');
      expect(placed.body).toMatchObject({ petId: created[0].id, status: 'placed' });
      expect((await placed.request.response())?.headers()['api-stability']).toBe('experimental');

      const complete = await tryItOut(page, 'completeOrder');
      await complete.locator('tr[data-param-name="orderId"] input').fill(String(placed.body.id));
      const completed = await execute(page, complete, '08-completeOrder-200.png');
      expect(completed.status, JSON.stringify(completed.body)).toBe('200');
      expect(completed.body).toEqual({ ...placed.body, status: 'completed', updatedAt: expect.any(String) });
      const pet = await server.api.GET('/pets/{petId}', { params: { path: { petId: created[0].id } } });
      expect(pet.data?.status).toBe('sold');

      // An API key, made with the authorized key: its secret shows once, and it works at once. Stable since 1.1.0: no marker.
      for (const id of ['getAccount', 'listApiKeys', 'createApiKey', 'rollApiKey', 'revokeApiKey']) {
        expect(await operation(page, id).locator('.opblock-summary-description').textContent(), id).toMatch(/^[A-Z][^()]+$/);
      }
      const createKey = await tryItOut(page, 'createApiKey');
      await createKey.locator('textarea.body-param__text').fill(JSON.stringify({ name: 'from swagger' }, null, 2));
      const made = await execute(page, createKey, '09-createApiKey-201.png');
      expect(made.status, JSON.stringify(made.body)).toBe('201');
      expect(made.request.headers()['authorization']).toBe(`Bearer ${server.key}`);
      expect(JSON.parse(made.request.postData()!)).toEqual({ name: 'from swagger' });
      expect(made.body).toMatchObject({ name: 'from swagger', expiresAt: null, revokedAt: null });
      expect(made.body.secret).toMatch(/^ask_[0-9A-Za-z]{36}$/);
      expect(made.body.secret).not.toBe(server.key);
      // Without scopes, the new key holds those of the key that made it: every one.
      const own = await server.api.GET('/account/api-keys', {});
      const maker = own.data!.find((key) => key.id !== made.body.id)!;
      expect(own.data!.map((key) => key.id).sort((a, b) => a - b)).toEqual([maker.id, made.body.id].sort((a, b) => a - b));
      expect(made.body.scopes).toEqual(maker.scopes);
      const withNewKey = typedClient(`${origin}/v1`, made.body.secret);
      const account = await withNewKey.GET('/account', {});
      expect(account.response.status).toBe(200);
      expect(account.data).toEqual((await server.api.GET('/account', {})).data);
      const pets = await withNewKey.GET('/pets', {});
      expect(pets.response.status).toBe(200);
      expect(pets.data!.map((p) => p.id)).toEqual(created.map((p) => p.id));
    } finally {
      await context.close();
    }
  });
});
