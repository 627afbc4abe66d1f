import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createEndpoint, WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';
import { canConnect, freePort } from '../helpers/ports.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** docs/WEBHOOKS.md's "Local development", as a newcomer follows it: its receiver, its URL, on a server with private targets allowed. */
const doc = readFileSync('docs/WEBHOOKS.md', 'utf8');
const section = doc.slice(doc.indexOf('## Local development'), doc.indexOf('\n## ', doc.indexOf('## Local development') + 1));
const receiverSource = /save this as `receiver\.mjs`[\s\S]*?```js\n([\s\S]*?)```/.exec(section)?.[1]?.replace(/^ {3}/gm, '');
const registeredUrl = /"url":"([^"]+)"/.exec(section)?.[1];

describe("docs/WEBHOOKS.md's local development recipe", () => {
  let server: TestServer;
  beforeAll(async () => {
    // Step 1: WEBHOOK_ALLOW_PRIVATE_TARGETS=true (in WEBHOOK_TEST_ENV).
    server = await startTestServer(WEBHOOK_TEST_ENV);
  });
  afterAll(() => server?.close());

  it('the receiver as saved verifies and prints a delivery, without a module-type warning, at the URL the page registers', async () => {
    expect(section).toContain('WEBHOOK_ALLOW_PRIVATE_TARGETS=true npm start');
    expect(registeredUrl).toBe('http://127.0.0.1:8080/hook');
    expect(receiverSource).toContain(".listen(8080, '127.0.0.1')");
    const key = await server.createKey('business');
    // The page's URL as shown is accepted by a development server (8080 itself may be taken here, so the receiver runs on another port).
    expect((await server.request('/v1/webhook-endpoints', { key, body: { url: registeredUrl, eventTypes: ['*'] } })).status).toBe(201);
    const port = await freePort();
    const endpoint = await createEndpoint(server, key, registeredUrl!.replace(':8080', `:${port}`));

    // Step 2: the file, and what `npm i standardwebhooks` installs (this checkout's copy).
    const dir = await scratchDir('as-recipe-');
    await writeFile(path.join(dir, 'receiver.mjs'), receiverSource!.replace('.listen(8080,', `.listen(${port},`));
    await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'));
    // Step 3: started with the secret the registration answered.
    const receiver = spawn(process.execPath, ['receiver.mjs'], { cwd: dir, env: { PATH: process.env.PATH, WEBHOOK_SECRET: endpoint.secret }, stdio: ['ignore', 'pipe', 'pipe'] });
    onTestFinished(() => void receiver.kill());
    let stdout = '';
    let stderr = '';
    receiver.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    receiver.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    expect(await waitFor(() => canConnect(port), 10_000, 50)).toBe(true);

    // Step 4: a change, and the line the page says the receiver prints.
    const pet = (await server.request('/v1/pets', { key, body: { name: 'Rex', categoryId: 7 } })).body as { id: number };
    expect(await waitFor(() => stdout.includes('pet.created'), 30_000)).toBe(true);
    // The line as the page shows it, but for the ids.
    const shown = /The receiver prints `([^`]+)`/.exec(section)![1]!;
    expect(stdout.trim().replace(/evt_\d+/, 'evt_1').replace(/id: \d+/, 'id: 1')).toBe(shown);
    expect(stdout).toContain(`id: ${pet.id},`);
    expect(stderr).toBe('');
    // The delivery log records a success just after its answer is in (webhooks/delivery.ts), so it may trail the print.
    const statuses = async () => ((await server.request(`/v1/webhook-endpoints/${endpoint.id}/deliveries`, { key })).body as Array<{ responseStatus: number }>).map((d) => d.responseStatus);
    expect(await waitFor(async () => (await statuses()).length > 0, 10_000, 20)).toBe(true);
    expect(await statuses()).toEqual([204]);
  });
});
