import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { compatCheck, OPTIC, prepare, RELEASED, ROOT } from '../../scripts/lib/compat.js';
import { release } from '../../scripts/release.js';

/*
 * npm run compat:check against variants of the committed released document (api/released/v1.yaml),
 * each written to a temporary folder: it fails on a breaking change of a stable operation and
 * passes on additions and on breaking changes the promise leaves out (experimental operations,
 * a deprecated one past its Sunset). Optic is installed into tools/compat by `npm run
 * compat:check` (.ci/run runs it before this group); without it the file is skipped, and fails
 * under TEST_REQUIRE_SERVICES=1.
 */

type Doc = Record<string, any>;
const releasedPath = join(ROOT, RELEASED);
const dir = mkdtempSync(join(tmpdir(), 'compat-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const toolMissing = !existsSync(OPTIC);
if (toolMissing) console.warn(`test/scripts/compatCheck.test.ts skipped: no Optic at ${OPTIC} (npm run compat:check installs it)`);

let count = 0;
/** Writes the released document, changed by `change`, and returns its path. */
function variant(change: (doc: Doc) => void): string {
  const doc = YAML.parse(readFileSync(releasedPath, 'utf8')) as Doc;
  change(doc);
  const file = join(dir, `variant-${++count}.yaml`);
  writeFileSync(file, YAML.stringify(doc, { aliasDuplicateObjects: false }));
  return file;
}
const schemas = (doc: Doc) => doc.components.schemas;

// Each Optic run takes about 5 s of CPU: two at a time on the 2-core machine.
let running = 0;
const waiting: (() => void)[] = [];
async function twoAtATime<T>(work: () => Promise<T>): Promise<T> {
  if (running >= 2) await new Promise<void>((resume) => waiting.push(resume));
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}
const check = (file: string, now?: Date) => twoAtATime(() => compatCheck(releasedPath, file, now ? { now } : {}));
const load = (file: string) => YAML.parse(readFileSync(file, 'utf8')) as Doc;
const released = () => load(releasedPath);

it.skipIf(toolMissing && process.env.TEST_REQUIRE_SERVICES !== '1')('has Optic installed (required under TEST_REQUIRE_SERVICES=1)', () => {
  expect(existsSync(OPTIC), `no Optic at ${OPTIC}: run npm run compat:check once (npm ci in tools/compat)`).toBe(true);
});

describe.skipIf(toolMissing).concurrent('compat:check against the released /v1 document', { timeout: 180_000 }, () => {
  it('fails on a required field added to a request body (createPet)', async () => {
    const result = await check(
      variant((doc) => {
        schemas(doc).NewPet.properties.microchip = { type: 'string' };
        schemas(doc).NewPet.required.push('microchip');
      }),
    );
    expect(result.ok).toBe(false);
    expect(result.report).toMatch(/POST \/pets[\s\S]*cannot add a required request property 'microchip'/);
  });

  it('fails on what Optic does not look for: a response header removed, a stable operation marked experimental, a deprecation without a Sunset', () => {
    const current = load(
      variant((doc) => {
        delete doc.paths['/pets/{petId}'].get.responses['200'].headers.ETag;
        doc.paths['/pets'].get['x-badges'] = [{ name: 'Experimental', color: 'orange' }];
        doc.paths['/pets'].post.deprecated = true;
      }),
    );
    expect(prepare(released(), current).problems).toEqual([
      'GET /pets: stable when released, marked experimental now (a stable operation stays stable within /v1)',
      'POST /pets: deprecated without a Sunset date (x-deprecation.sunset) for its Sunset header',
      'GET /pets/{petId}: response 200 no longer declares the header etag',
    ]);
    expect(prepare(released(), released()).problems).toEqual([]);
  });

  it('reports tighter request constraints of stable operations for review, without failing', () => {
    const current = load(
      variant((doc) => {
        schemas(doc).PetName.maxLength = 100;
        schemas(doc).NewOrder.properties.petId.maximum = 1000; // placeOrder: experimental
      }),
    );
    const prepared = prepare(released(), current);
    expect(prepared.problems).toEqual([]);
    expect(prepared.warnings).toContain('POST /pets: request body (application/json) name: maxLength 200 -> 100');
    expect(prepared.warnings.some((warning) => warning.includes('/store/orders'))).toBe(false);
    expect(prepare(released(), released()).warnings).toEqual([]);
  });

  it('passes additions: optional request and response fields, an operation, an ErrorCode value', async () => {
    const result = await check(
      variant((doc) => {
        schemas(doc).NewPet.properties.microchip = { type: 'string', maxLength: 40 };
        schemas(doc).Pet.properties.microchip = { type: 'string' };
        schemas(doc).ErrorCode.enum.push('brand_new_code');
        doc.paths['/pets/{petId}/photos'] = {
          get: {
            operationId: 'listPetPhotos',
            summary: 'List an animal’s photos',
            parameters: [{ $ref: '#/components/parameters/PetId' }],
            responses: { '200': { description: 'Photos', content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } } } },
          },
        };
      }),
    );
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('passes breaking changes in experimental operations (orders, API keys), and lists them as outside the promise', async () => {
    const result = await check(
      variant((doc) => {
        schemas(doc).NewOrder.properties.note = { type: 'string' };
        schemas(doc).NewOrder.required.push('note');
        delete schemas(doc).Order.properties.petId;
        schemas(doc).Order.required = schemas(doc).Order.required.filter((name: string) => name !== 'petId');
        schemas(doc).OrderStatus.enum.push('expired');
        delete doc.paths['/account/api-keys/{keyId}/roll'];
      }),
    );
    expect(result.report).toContain('POST /store/orders (experimental)');
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('holds the deprecated getPet to the promise until its Sunset, and lets it go after', async () => {
    const removed = variant((doc) => delete doc.paths['/pets/{petId}'].get);
    expect(prepare(released(), load(removed), new Date('2030-12-04T23:59:59Z')).exempt.has('GET /pets/{petId}')).toBe(false);
    const after = await check(removed, new Date('2030-12-05T00:00:01Z'));
    expect(after.report).toContain('GET /pets/{petId} (deprecated, Sunset 2030-12-05T00:00:00.000Z passed)');
    expect(after.ok).toBe(true);
  });

  it('fails on a field removed from a response and on a removed operation: npm run compat:check exits 1 with the list', async () => {
    const breaking = variant((doc) => {
      delete schemas(doc).Pet.properties.categoryId;
      schemas(doc).Pet.required = schemas(doc).Pet.required.filter((name: string) => name !== 'categoryId');
      delete doc.paths['/pets'].post;
    });
    const cli = await twoAtATime(() =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/compatCheck.ts'), '--current', breaking], { cwd: ROOT }).then(
        () => ({ status: 0, stdout: '' }),
        (err: { code: number; stdout: string }) => ({ status: err.code, stdout: err.stdout }),
      ),
    );
    expect(cli.stdout).toMatch(/GET \/pets:[\s\S]*cannot remove response property 'categoryId'/);
    expect(cli.stdout).toMatch(/POST \/pets: removed[\s\S]*cannot remove an operation/);
    expect(cli.stdout).toContain('compat:check: BREAKING');
    expect(cli.status).toBe(1);
  });

  it('npm run release: records an additive change with its CHANGELOG entry; refuses a breaking one and a version already released', async () => {
    const root = join(dir, 'release');
    mkdirSync(join(root, 'api/released'), { recursive: true });
    copyFileSync(releasedPath, join(root, RELEASED));
    copyFileSync(join(ROOT, 'CHANGELOG.md'), join(root, 'CHANGELOG.md'));
    const additive = variant((doc) => {
      doc.info.version = '1.1.0';
      schemas(doc).Pet.properties.microchip = { type: 'string' };
    });
    copyFileSync(additive, join(root, 'openapi.yaml'));
    await twoAtATime(() => release(root, { now: new Date('2026-12-01T10:00:00Z') }));
    const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(/## 1\.1\.0 \(2026-12-01\)\n\nNo operation added or removed[^\n]*\n\n## 1\.0\.0 \(/);
    expect(readFileSync(join(root, RELEASED), 'utf8')).toBe(readFileSync(additive, 'utf8'));
    await expect(release(root)).rejects.toThrow('1.1.0 is already in CHANGELOG.md');

    const breaking = variant((doc) => {
      doc.info.version = '1.2.0';
      delete schemas(doc).Pet.properties.name;
    });
    copyFileSync(breaking, join(root, 'openapi.yaml'));
    await expect(twoAtATime(() => release(root))).rejects.toThrow(/not released: a breaking change needs a new major version/);
    expect(readFileSync(join(root, 'CHANGELOG.md'), 'utf8')).toBe(changelog);
    expect(readFileSync(join(root, RELEASED), 'utf8')).toBe(readFileSync(additive, 'utf8'));
  });
});
