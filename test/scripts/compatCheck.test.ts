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
 * npm run compat:check against planted variants of a base document: the committed released one
 * (api/released/v1.yaml) with the stability markers and open enums set here, as issue 44's
 * decisions place them (orders experimental, webhook endpoints beta, the rest stable; ErrorCode,
 * the event types and the order statuses x-extensible-enum), so that no case depends on the
 * markers the released file happens to carry. Each variant is written to a temporary folder: the
 * check fails on a breaking change of a stable or beta operation and passes on additions and on
 * breaking changes the promise leaves out (experimental operations, a deprecated one past its
 * Sunset, a beta one past the sunset of its released x-deprecation). Optic is installed into
 * tools/compat by `npm run compat:check` (.ci/run runs it before this group); without it the file
 * is skipped, and fails under TEST_REQUIRE_SERVICES=1.
 */

type Doc = Record<string, any>;
const releasedPath = join(ROOT, RELEASED);
const dir = mkdtempSync(join(tmpdir(), 'compat-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const toolMissing = !existsSync(OPTIC);
if (toolMissing) console.warn(`test/scripts/compatCheck.test.ts skipped: no Optic at ${OPTIC} (npm run compat:check installs it)`);

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
type Level = 'Experimental' | 'Beta';
/** Path prefixes and their x-badges; any other operation is stable. */
type Levels = [prefix: string, level: Level][];
const LEVELS: Levels = [
  ['/store/orders', 'Experimental'],
  ['/webhook-endpoints', 'Beta'],
];

/** Pushes `value` into every enum that holds `member` (a value's enum may be written in several places). */
function addEnumValue(doc: unknown, member: string, value: string): void {
  if (!doc || typeof doc !== 'object') return;
  const node = doc as Doc;
  if (Array.isArray(node.enum) && node.enum.includes(member)) node.enum.push(value);
  for (const child of Object.values(node)) addEnumValue(child, member, value);
}
function markOpen(doc: unknown, member: string): void {
  if (!doc || typeof doc !== 'object') return;
  const node = doc as Doc;
  if (Array.isArray(node.enum) && node.enum.includes(member)) node['x-extensible-enum'] = true;
  for (const child of Object.values(node)) markOpen(child, member);
}

/** The released document with the markers of `levels`: no other x-badges, no x-deprecation but a deprecated operation's. */
function base(levels: Levels = LEVELS): Doc {
  const doc = YAML.parse(readFileSync(releasedPath, 'utf8')) as Doc;
  for (const [path, item] of Object.entries(doc.paths as Record<string, Doc>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      delete op['x-badges'];
      if (!op.deprecated) delete op['x-deprecation'];
      const level = levels.find(([prefix]) => path.startsWith(prefix))?.[1];
      if (level) op['x-badges'] = [{ name: level, color: level === 'Beta' ? 'blue' : 'orange' }];
    }
  }
  doc.components.schemas.ErrorCode['x-extensible-enum'] = true;
  markOpen(doc, 'pet.created'); // EventType, and the event types of webhook endpoints
  markOpen(doc, 'placed'); // OrderStatus, and the orders' status filter
  return doc;
}

let count = 0;
const write = (doc: Doc, name: string): string => {
  const file = join(dir, `${name}-${++count}.yaml`);
  writeFileSync(file, YAML.stringify(doc, { aliasDuplicateObjects: false }));
  return file;
};
const basePath = write(base(), 'base');
interface Planted {
  released: string;
  current: string;
}
/**
 * Writes a variant of the base, changed by `change`, and the base it is compared with (the
 * default one, or one with other levels or with `changeReleased` applied).
 */
function plant(change: (doc: Doc) => void, { levels, changeReleased }: { levels?: Levels; changeReleased?: (doc: Doc) => void } = {}): Planted {
  const released = base(levels);
  changeReleased?.(released);
  const current = structuredClone(released);
  change(current);
  return { released: levels || changeReleased ? write(released, 'released') : basePath, current: write(current, 'variant') };
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
const check = (planted: Planted, now?: Date) => twoAtATime(() => compatCheck(planted.released, planted.current, now ? { now } : {}));
const load = (file: string) => YAML.parse(readFileSync(file, 'utf8')) as Doc;
const prepared = (planted: Planted, now?: Date) => prepare(load(planted.released), load(planted.current), now);

it.skipIf(toolMissing && process.env.TEST_REQUIRE_SERVICES !== '1')('has Optic installed (required under TEST_REQUIRE_SERVICES=1)', () => {
  expect(existsSync(OPTIC), `no Optic at ${OPTIC}: run npm run compat:check once (npm ci in tools/compat)`).toBe(true);
});

describe.skipIf(toolMissing).concurrent('compat:check against the released /v1 document', { timeout: 600_000 }, () => {
  // Breaking changes Optic finds.
  it('fails on a required field added to a request body (createPet)', async () => {
    const result = await check(
      plant((doc) => {
        schemas(doc).NewPet.properties.microchip = { type: 'string' };
        schemas(doc).NewPet.required.push('microchip');
      }),
    );
    expect(result.ok).toBe(false);
    expect(result.report).toMatch(/POST \/pets[\s\S]*cannot add a required request property 'microchip'/);
  });

  it('fails on a value added to a closed enum in a response (PetStatus), though open enums may grow', async () => {
    const result = await check(plant((doc) => schemas(doc).PetStatus.enum.push('reserved')));
    expect(result.report).toMatch(/GET \/pets[\s\S]*cannot add enum option 'reserved'/);
    expect(result.ok).toBe(false);
  });

  it('fails on a value removed from an open enum that requests send (an event type: listEvents?type=, webhook endpoints)', async () => {
    const planted = plant((doc) => {
      const drop = (node: unknown): void => {
        if (!node || typeof node !== 'object') return;
        const n = node as Doc;
        if (Array.isArray(n.enum)) n.enum = n.enum.filter((value: unknown) => value !== 'pet.deleted');
        Object.values(n).forEach(drop);
      };
      drop(doc);
    });
    const result = await check(planted);
    expect(result.report).toMatch(/GET \/events[\s\S]*cannot remove enum option 'pet.deleted' from query parameter 'type'/);
    expect(result.ok).toBe(false);
  });

  // Breaking changes scripts/lib/compat.ts finds besides Optic.
  it('fails on what Optic does not look for: a response header removed, a stable operation made experimental or beta, a beta one experimental, a deprecation without a Sunset, a beta notice under 90 days', () => {
    const now = new Date('2026-12-01T00:00:00Z');
    const planted = plant((doc) => {
      delete doc.paths['/pets/{petId}'].get.responses['200'].headers.ETag;
      doc.paths['/pets'].get['x-badges'] = [{ name: 'Experimental', color: 'orange' }];
      doc.paths['/pets'].post.deprecated = true;
      doc.paths['/events'].get['x-badges'] = [{ name: 'Beta', color: 'blue' }];
      doc.paths['/webhook-endpoints'].get['x-badges'] = [{ name: 'Experimental', color: 'orange' }];
      doc.paths['/webhook-endpoints'].post['x-deprecation'] = { sunset: '2027-01-15T00:00:00Z', description: 'eventTypes becomes required' };
    });
    expect(prepared(planted, now).problems).toEqual([
      'GET /pets: stable when released, marked experimental now (a stable operation stays stable within /v1)',
      'POST /pets: deprecated without a Sunset date (x-deprecation.sunset) for its Sunset header',
      'GET /pets/{petId}: response 200 no longer declares the header etag',
      'GET /events: stable when released, marked beta now (a stable operation stays stable within /v1)',
      'GET /webhook-endpoints: beta when released, marked experimental now (a beta operation changes only with notice, by x-deprecation)',
      "POST /webhook-endpoints: x-deprecation sunset 2027-01-15T00:00:00.000Z is less than 90 days ahead (a beta operation's notice)",
    ]);
    expect(prepare(load(basePath), load(basePath)).problems).toEqual([]);
    // Graduating: beta to stable, its API-Stability header gone, and a notice of 90 days or more, keep the promise.
    const graduated = plant((doc) => {
      const op = doc.paths['/webhook-endpoints'].get;
      delete op['x-badges'];
      for (const response of Object.values(op.responses as Record<string, Doc>)) delete response.headers?.['API-Stability'];
      doc.paths['/webhook-endpoints'].post['x-deprecation'] = { sunset: '2027-03-01T00:00:00Z', description: 'eventTypes becomes required' };
    });
    expect(prepared(graduated, now).problems).toEqual([]);
  });

  it('fails on a request media type removed (application/json from updatePet): npm run compat:check exits 1', async () => {
    const result = await check(plant((doc) => delete doc.paths['/pets/{petId}'].patch.requestBody.content['application/json']));
    expect(result.report).toContain('x PATCH /pets/{petId}: the request body no longer accepts application/json');
    expect(result.ok).toBe(false);
  });

  it('fails on an optional query parameter removed (categoryId from listPets)', async () => {
    const result = await check(
      plant((doc) => {
        doc.paths['/pets'].get.parameters = doc.paths['/pets'].get.parameters.filter((p: Doc) => p.$ref !== '#/components/parameters/CategoryFilter');
      }),
    );
    expect(result.report).toContain('x GET /pets: query parameter categoryId removed or renamed');
    expect(result.ok).toBe(false);
  });

  it('fails on an optional query parameter renamed (type to eventType on listEvents)', async () => {
    const result = await check(plant((doc) => (doc.components.parameters.EventTypeFilter.name = 'eventType')));
    expect(result.report).toContain('x GET /events: query parameter type removed or renamed');
    expect(result.ok).toBe(false);
  });

  it('fails on a format narrowed from int64 to int32 in a request (the categoryId filter), its maximum with it', async () => {
    const result = await check(
      plant((doc) => {
        Object.assign(doc.components.parameters.CategoryFilter.schema, { format: 'int32', maximum: 2147483647 });
      }),
    );
    expect(result.report).toContain('x GET /pets: query parameter categoryId: format int64 -> int32');
    expect(result.ok).toBe(false);
  });

  it('fails on a format changed from int64 to int32 in a response (Pet id: every SDK types it anew)', async () => {
    const result = await check(plant((doc) => Object.assign(schemas(doc).Pet.properties.id, { format: 'int32', maximum: 2147483647 })));
    expect(result.report).toContain('x GET /pets/{petId}: response 200 (application/json) id: format int64 -> int32');
    expect(result.ok).toBe(false);
  });

  it('fails on a format removed from a response field (an event’s createdAt no longer date-time)', async () => {
    const result = await check(plant((doc) => delete schemas(doc).Event.properties.createdAt.format));
    expect(result.report).toContain('x GET /events/{eventId}: response 200 (application/json) createdAt: format date-time removed');
    expect(result.ok).toBe(false);
  });

  it('fails on a breaking change to a beta operation (webhook endpoints), also when the notice comes with it', async () => {
    const result = await check(
      plant((doc) => {
        delete schemas(doc).WebhookEndpoint.properties.disabledReason;
        schemas(doc).WebhookEndpoint.required = schemas(doc).WebhookEndpoint.required.filter((name: string) => name !== 'disabledReason');
        doc.paths['/webhook-endpoints/{endpointId}'].get['x-deprecation'] = { sunset: '2020-01-01T00:00:00Z', description: 'disabledReason goes' };
      }),
    );
    expect(result.report).toMatch(/GET \/webhook-endpoints\/\{endpointId\}:[\s\S]*cannot remove response property 'disabledReason'/);
    expect(result.report).not.toContain('(beta, the change announced');
    expect(result.ok).toBe(false);
  });

  it('holds a beta operation with a released x-deprecation to the promise until its sunset, and lets the change through after', async () => {
    const sunset = '2027-03-01T00:00:00Z';
    const planted = plant((doc) => delete doc.paths['/webhook-endpoints/{endpointId}/rotate-secret'], {
      changeReleased: (doc) => {
        doc.paths['/webhook-endpoints/{endpointId}/rotate-secret'].post['x-deprecation'] = { sunset, description: 'rotateWebhookSecret goes' };
      },
    });
    const [before, after] = await Promise.all([check(planted, new Date('2027-02-28T23:59:59Z')), check(planted, new Date('2027-03-01T00:00:01Z'))]);
    expect(before.report).toMatch(/POST \/webhook-endpoints\/\{endpointId\}\/rotate-secret: removed[\s\S]*cannot remove an operation/);
    expect(before.ok).toBe(false);
    expect(after.report).toContain('POST /webhook-endpoints/{endpointId}/rotate-secret (beta, the change announced by x-deprecation, sunset 2027-03-01T00:00:00.000Z passed)');
    expect(after.ok).toBe(true);
  });

  it('reports tighter request constraints of stable operations for review, without failing', () => {
    const planted = plant((doc) => {
      schemas(doc).PetName.maxLength = 100;
      schemas(doc).NewOrder.properties.petId.maximum = 1000; // placeOrder: experimental
    });
    const result = prepared(planted);
    expect(result.problems).toEqual([]);
    expect(result.warnings).toContain('POST /pets: request body (application/json) name: maxLength 200 -> 100');
    expect(result.warnings.some((warning) => warning.includes('/store/orders'))).toBe(false);
    expect(prepare(load(basePath), load(basePath)).warnings).toEqual([]);
  });

  // Additive changes, and changes the promise leaves out.
  it('passes additions: optional request and response fields, an operation, an ErrorCode value', async () => {
    const result = await check(
      plant((doc) => {
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
    expect(result.report).toContain("open enum #/components/schemas/ErrorCode: 'brand_new_code' added (x-extensible-enum)");
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('passes a new event type (listEvents, getEvent stable; webhook endpoints beta), an open enum in requests and responses', async () => {
    const result = await check(plant((doc) => addEnumValue(doc, 'pet.created', 'pet.adopted')));
    expect(result.report).toContain("open enum #/components/schemas/EventType: 'pet.adopted' added (x-extensible-enum)");
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('passes a new order status with the order operations stable', async () => {
    const result = await check(plant((doc) => addEnumValue(doc, 'placed', 'on_hold'), { levels: [['/webhook-endpoints', 'Beta']] }));
    expect(result.report).toContain('outside the promise: 0 operations'); // getPet's Sunset is in 2030
    expect(result.report).toContain("open enum #/components/schemas/OrderStatus: 'on_hold' added (x-extensible-enum)");
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  // Not here: a request media type added, which Optic reports as every property of its schema added as required.
  it('passes what widens a request or only describes a response: a format that keeps the values, an optional query parameter', async () => {
    const result = await check(
      plant((doc) => {
        doc.components.parameters.Limit.schema.format = 'int32'; // 1..100
        schemas(doc).ErrorBody.properties.status.format = 'int32'; // a response field
        doc.paths['/pets'].get.parameters.push({ name: 'namePrefix', in: 'query', required: false, schema: { type: 'string', maxLength: 200 } });
      }),
    );
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('passes breaking changes in experimental operations (orders, API keys), and lists them as outside the promise', async () => {
    const result = await check(
      plant(
        (doc) => {
          schemas(doc).NewOrder.properties.note = { type: 'string' };
          schemas(doc).NewOrder.required.push('note');
          delete schemas(doc).Order.properties.petId;
          schemas(doc).Order.required = schemas(doc).Order.required.filter((name: string) => name !== 'petId');
          schemas(doc).OrderStatus.enum = schemas(doc).OrderStatus.enum.filter((status: string) => status !== 'cancelled');
          delete doc.paths['/account/api-keys/{keyId}/roll'];
        },
        { levels: [...LEVELS, ['/account/api-keys', 'Experimental']] },
      ),
    );
    expect(result.report).toContain('POST /store/orders (experimental)');
    expect(result.report).toContain('POST /account/api-keys/{keyId}/roll (experimental)');
    expect(result.report).toContain('compat:check: no breaking change');
    expect(result.ok).toBe(true);
  });

  it('holds the deprecated getPet to the promise until its Sunset, and lets it go after', async () => {
    const removed = plant((doc) => delete doc.paths['/pets/{petId}'].get);
    expect(prepared(removed, new Date('2030-12-04T23:59:59Z')).exempt.has('GET /pets/{petId}')).toBe(false);
    const after = await check(removed, new Date('2030-12-05T00:00:01Z'));
    expect(after.report).toContain('GET /pets/{petId} (deprecated, Sunset 2030-12-05T00:00:00.000Z passed)');
    expect(after.ok).toBe(true);
  });

  it('fails on a field removed from a response and on a removed operation: npm run compat:check exits 1 with the list', async () => {
    const breaking = plant((doc) => {
      delete schemas(doc).Pet.properties.categoryId;
      schemas(doc).Pet.required = schemas(doc).Pet.required.filter((name: string) => name !== 'categoryId');
      delete doc.paths['/pets'].post;
    });
    const cli = await twoAtATime(() =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts/compatCheck.ts'), '--released', breaking.released, '--current', breaking.current], {
        cwd: ROOT,
      }).then(
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
    copyFileSync(basePath, join(root, RELEASED));
    copyFileSync(join(ROOT, 'CHANGELOG.md'), join(root, 'CHANGELOG.md'));
    const additive = plant((doc) => {
      doc.info.version = '1.90.0'; // above any real release, whose CHANGELOG.md entries this copy holds
      schemas(doc).Pet.properties.microchip = { type: 'string' };
    }).current;
    copyFileSync(additive, join(root, 'openapi.yaml'));
    await twoAtATime(() => release(root, { now: new Date('2026-12-01T10:00:00Z') }));
    const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(/## 1\.90\.0 \(2026-12-01\)\n\nNo operation added or removed[^\n]*\n\n## 1\.\d+\.\d+ \(/);
    expect(readFileSync(join(root, RELEASED), 'utf8')).toBe(readFileSync(additive, 'utf8'));
    await expect(release(root)).rejects.toThrow('1.90.0 is already in CHANGELOG.md');

    const breaking = plant((doc) => {
      doc.info.version = '1.91.0';
      delete schemas(doc).Pet.properties.name;
    }).current;
    copyFileSync(breaking, join(root, 'openapi.yaml'));
    await expect(twoAtATime(() => release(root))).rejects.toThrow(/not released: a breaking change needs a new major version/);
    expect(readFileSync(join(root, 'CHANGELOG.md'), 'utf8')).toBe(changelog);
    expect(readFileSync(join(root, RELEASED), 'utf8')).toBe(readFileSync(additive, 'utf8'));
  });
});
