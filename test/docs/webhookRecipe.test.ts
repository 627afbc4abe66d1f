import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/*
 * docs/WEBHOOKS.md's "Local development", as a newcomer follows it, each step in a terminal of its
 * own (nothing carried over but what the page says to set): its receiver, its shell blocks, and what
 * the page says they print, on a server with private targets allowed. The liberties taken: this
 * server's address for 127.0.0.1:3000, a free port for 8080, a real key for the page's `ask_…`.
 */

const run = promisify(execFile);
// Each block runs in `bash --norc -c`: with its input a socket (as Node's pipes are), bash would read ~/.bashrc as if run by sshd.
const doc = readFileSync('docs/WEBHOOKS.md', 'utf8');
const sectionOf = (heading: string) => doc.slice(doc.indexOf(heading), doc.indexOf('\n## ', doc.indexOf(heading) + 1));
const section = sectionOf('## Local development');
/** The page's fenced blocks of a language, in order, unindented. */
const blocks = (text: string, lang: string) => [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!.replace(/^ {3}/gm, ''));
const [serverBlock, installBlock, registerBlock, changeBlock, deliveriesBlock] = blocks(section, 'sh');
const [shownReady, shownRefused] = blocks(section, 'console').map((b) => b.trim().split('\n'));
const receiverSource = blocks(section, 'js')[0]!;
const KEY_LINE = /^KEY=ask_….*$/m;

describe("docs/WEBHOOKS.md's local development recipe", () => {
  let server: TestServer;
  let port: number;
  let dir: string;
  /** A block as run here: this server's address, the receiver's port, the key given. */
  const asHere = (block: string, key: string | null) =>
    block.replaceAll('http://127.0.0.1:3000', server.baseUrl).replaceAll('8080', String(port)).replace(KEY_LINE, key === null ? '' : `KEY=${key}`);
  /** Back to the page's address and port, and its placeholders for what differs from run to run. */
  const asShown = (line: string, id = 1) =>
    line
      .replaceAll(String(port), '8080')
      .replace(/^\{"id":\d+/, `{"id":${id}`)
      .replace(/"createdAt":"[^"]+"/, '"createdAt":"…"')
      .replace(/"secret":"whsec_[A-Za-z0-9+/=]{44}"/, '"secret":"whsec_…"');

  beforeAll(async () => {
    // Step 1: WEBHOOK_ALLOW_PRIVATE_TARGETS=true (in WEBHOOK_TEST_ENV).
    server = await startTestServer(WEBHOOK_TEST_ENV);
    port = await freePort();
    // Step 2: the file, and what `npm i standardwebhooks` installs (this checkout's copy).
    dir = await scratchDir('as-recipe-');
    await writeFile(path.join(dir, 'receiver.mjs'), asHere(receiverSource, null));
    await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'));
  });
  afterAll(() => server?.close());

  it('has the steps this test runs', () => {
    expect(serverBlock!.trim()).toBe('WEBHOOK_ALLOW_PRIVATE_TARGETS=true npm start');
    expect(installBlock!.trim()).toBe('npm init -y >/dev/null && npm i standardwebhooks');
    expect([registerBlock, changeBlock].map((b) => KEY_LINE.test(b!))).toEqual([true, true]);
    expect(deliveriesBlock).toContain('/v1/webhook-endpoints/1/deliveries');
    expect([shownReady!.length, shownRefused!.length]).toEqual([2, 2]);
  });

  it('registers, starts the receiver (which says when it listens), delivers a change, and logs the attempt, as the page shows', async () => {
    const key = await server.createKey('free');
    // Step 3, in the receiver's terminal.
    const receiver = spawn('bash', ['--norc', '-c', asHere(registerBlock!, key)], { cwd: dir, env: { PATH: process.env.PATH }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    // The receiver's terminal closed: bash and node, its process group (gone already if the receiver refused to start).
    onTestFinished(() => {
      if (receiver.exitCode === null) process.kill(-receiver.pid!, 'SIGTERM');
    });
    let stdout = '';
    let stderr = '';
    receiver.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    receiver.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    expect(await waitFor(() => stdout.includes('listening') || receiver.exitCode !== null, 15_000, 50), stderr).toBe(true);
    const [answer, ready] = stdout.trim().split('\n');
    expect([asShown(answer!), asShown(ready!)]).toEqual(shownReady);
    const endpointId = (JSON.parse(answer!) as { id: number }).id;

    // Step 4, in a third terminal: a change, and the line the page says the receiver prints.
    const created = await run('bash', ['--norc', '-c', asHere(changeBlock!, key)], { env: { PATH: process.env.PATH } });
    const pet = JSON.parse(created.stdout) as { id: number };
    expect(created.stdout.endsWith('}\n')).toBe(true);
    expect(await waitFor(() => /^evt_\d+ pet\.created/m.test(stdout), 30_000)).toBe(true);
    const shown = /The receiver prints `([^`]+)`/.exec(section)![1]!;
    expect(stdout.trim().split('\n')[2]!.replace(/evt_\d+/, 'evt_1').replace(/id: \d+/, 'id: 1')).toBe(shown);
    expect(stdout).toContain(`id: ${pet.id},`);
    expect(stderr).toBe('');

    // The delivery log records a success just after its answer is in (webhooks/delivery.ts), so it may trail the print:
    // waited for here (a few requests of the key's quota), then read as the page says, at the endpoint's id, in step 4's terminal (KEY set).
    const logged = async () => (await server.request(`/v1/webhook-endpoints/${endpointId}/deliveries`, { key })).body as unknown[];
    expect(await waitFor(async () => (await logged()).length > 0, 10_000, 100)).toBe(true);
    const deliveries = await run('bash', ['--norc', '-c', `KEY=${key}\n${asHere(deliveriesBlock!, key).replace('/webhook-endpoints/1/', `/webhook-endpoints/${endpointId}/`)}`]);
    expect((JSON.parse(deliveries.stdout) as Array<{ responseStatus: number }>).map((d) => d.responseStatus)).toEqual([204]);
  });

  it('without the key set (a new terminal), shows the API\'s answer and the receiver refuses in a sentence, as the page shows', async () => {
    const result = await run('bash', ['--norc', '-c', asHere(registerBlock!, null)], { cwd: dir, env: { PATH: process.env.PATH }, timeout: 30_000 }).catch(
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect('code' in result ? result.code : 0).toBe(1);
    // One line each: the API's answer, and the receiver's refusal, with no stack trace.
    expect([result.stdout, result.stderr]).toEqual(shownRefused!.map((line) => `${line}\n`));
  });

  it("the page's endpoint example and Swagger UI's (openapi.yaml) answer 201 on a development server, each subscribed to a few types", async () => {
    const key = await server.createKey('free');
    const example = blocks(sectionOf('## Endpoints'), 'bash')[0]!;
    const shownAnswer = /# 201 ([\s\S]*)$/.exec(example.trim())![1]!.replace(/\n#\s+/g, '');
    const answered = await run('bash', ['--norc', '-c', asHere(example, null).replaceAll('$KEY', key)]);
    expect(asShown(answered.stdout.trim(), 5)).toBe(shownAnswer);

    const openapi = parse(readFileSync('openapi.yaml', 'utf8'));
    const swaggerExample = openapi.components.schemas.NewWebhookEndpoint.example as { url: string; eventTypes: string[] };
    // The recipe's registration, which the test above runs against its receiver.
    expect(JSON.stringify(swaggerExample)).toBe(/-d '(\{"url"[^']*\})'/.exec(registerBlock!)![1]);
    const res = await server.request('/v1/webhook-endpoints', { key, body: swaggerExample });
    expect([res.status, res.body.eventTypes]).toEqual([201, ['pet.created']]);
  });
});
