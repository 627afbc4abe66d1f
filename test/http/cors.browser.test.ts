import { readFile, mkdir, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { launchChromium } from '../helpers/chromium.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * CORS in a real browser (Debian chromium driven by playwright-core): a page served from
 * another origin calls the API with fetch, as a browser app on a CORS_ORIGINS origin does,
 * and a page from an origin not listed is blocked by the browser itself. What each page saw
 * is returned to the test; screenshots of the pages' logs land in test-artifacts/cors/.
 */

const ARTIFACTS = path.join(projectRoot, 'test-artifacts', 'cors');
/** Every wait in this file is bounded by this (or less); each fetch in the page by 10 s. */
const WAIT = 15_000;

/** `text` as a regular expression that matches it literally. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A static server for the page, on a port (an origin) of its own. */
async function servePage(html: string) {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let api: TestServer;
let browser: Browser;
let listed: Awaited<ReturnType<typeof servePage>>;
let unlisted: Awaited<ReturnType<typeof servePage>>;

beforeAll(async () => {
  await rm(ARTIFACTS, { recursive: true, force: true });
  await mkdir(ARTIFACTS, { recursive: true });
  const html = await readFile(path.join(projectRoot, 'test', 'http', 'fixtures', 'corsPage.html'), 'utf8');
  listed = await servePage(html);
  unlisted = await servePage(html);
  api = await startTestServer({ CORS_ORIGINS: listed.origin });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await listed?.close();
  await unlisted?.close();
});

/** Opens the page at `origin` in a fresh context, runs `use`, saves a screenshot, and closes it. */
async function onPage<T>(origin: string, screenshot: string, use: (page: Page, consoleErrors: string[]) => Promise<T>): Promise<T> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 600 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.setDefaultNavigationTimeout(WAIT);
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    await page.goto(`${origin}/`);
    try {
      return await use(page, consoleErrors);
    } finally {
      // The page logs each call and its status: on a failure too, it shows how far the page got.
      await page.screenshot({ path: path.join(ARTIFACTS, screenshot), fullPage: true, timeout: WAIT });
    }
  } finally {
    await context.close();
  }
}

describe('CORS in a real browser', () => {
  it('lets a page on a listed origin create, read conditionally, change with If-Match, page with Link and delete', async () => {
    const seen = await onPage(listed.origin, '01-listed-origin.png', (page) =>
      page
        .evaluate(([base, key]) => (globalThis as any).crossOriginFlow(base, key), [`${api.baseUrl}/v1`, api.key])
        // The first line says which call failed; the page's stack (http:// frames) would only confuse vitest's source maps.
        .catch((error: Error) => {
          throw new Error(`the page's calls failed: ${error.message.split('\n')[0]}`);
        }),
    );
    const { id } = seen.created;
    expect(seen.created).toEqual({
      status: 201,
      id: expect.any(Number),
      etag: expect.stringMatching(/^"\d+"$/),
      location: `${api.baseUrl}/v1/pets/${id}`,
      requestId: 'browser-Biscuit',
    });
    expect(seen.notModified).toEqual({ status: 304 });
    expect(seen.updated).toEqual({ status: 200, name: 'Pepper', etag: expect.stringMatching(/^"\d+"$/) });
    expect(seen.updated.etag).not.toBe(seen.created.etag);
    expect(seen.stale).toEqual({ status: 412, body: { code: 'precondition_failed', message: expect.any(String), status: 412 } });
    expect(seen.firstPage).toEqual({
      status: 200,
      ids: [id],
      link: expect.stringMatching(new RegExp(`^<${literally(api.baseUrl)}/v1/pets\\?limit=1&cursor=[\\w-]+>; rel="next"$`)),
      limit: expect.stringMatching(/^\d+$/),
      // The key's sixth counted request, this one included: the preflights before the calls were not counted.
      remaining: String(Number(seen.firstPage.limit) - 6),
      rateLimit: expect.stringMatching(new RegExp(`^"minute";r=${Number(seen.firstPage.limit) - 6};t=\\d+, "day";r=\\d+;t=\\d+$`)),
    });
    expect(seen.nextPage).toEqual({ status: 200, ids: [seen.other.id] });
    expect(seen.deleted).toEqual({ status: 204 });
    expect(seen.deletedOther).toEqual({ status: 204 });
    for (const pet of [id, seen.other.id]) expect((await api.request(`/v1/pets/${pet}`)).status).toBe(404);
  });

  it('leaves a page on an origin not listed with a rejected fetch: the browser blocks it, nothing is stored', async () => {
    const before = await api.petCount();
    const { seen, consoleErrors } = await onPage(unlisted.origin, '02-unlisted-origin.png', async (page, consoleErrors) => ({
      seen: await page.evaluate(([base, key]) => (globalThis as any).firstCall(base, key), [`${api.baseUrl}/v1`, api.key]),
      consoleErrors,
    }));
    expect(seen).toEqual({ error: { name: 'TypeError', message: 'POST /pets: Failed to fetch' } });
    expect(consoleErrors.join('\n')).toMatch(new RegExp(`from origin '${literally(unlisted.origin)}' has been blocked by CORS policy`));
    expect(await api.petCount()).toBe(before);
  });
});
