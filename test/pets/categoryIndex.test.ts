import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pagination/cursor.js';
import { LIST_BY_CATEGORY, LIST_BY_CATEGORY_AND_STATUS } from '../../src/pets/sql.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * A category's pages, however deep, are a range scan of a category index from the cursor:
 * the repository's own statements, explained on a few thousand pets with fresh statistics
 * and the planner left to choose (no enable_* settings).
 */
const PETS = 4000;
const CATEGORIES = 40;
let server: TestServer;
let deepAfterId: number;
beforeAll(async () => {
  server = await startTestServer();
  const pool = server.app.database.pool;
  const { accountId } = await server.app.accounts.createAccount({ plan: 'business' });
  // Realistic: 40 categories, most pets available, some already removed.
  await pool.query(
    `INSERT INTO pets (name, category_id, status, created_by)
     SELECT 'Pet ' || g, 1 + g % ${CATEGORIES}, CASE WHEN g % 10 < 7 THEN 'available' WHEN g % 10 < 9 THEN 'pending' ELSE 'sold' END, $1
       FROM generate_series(1, ${PETS}) AS g`,
    [accountId],
  );
  await pool.query(`UPDATE pets SET deleted_at = now() WHERE id % 17 = 0`);
  await pool.query('ANALYZE pets');
  // After 95% of the pets: a deep page.
  deepAfterId = (await pool.query<{ id: number }>(`SELECT id::int FROM pets ORDER BY id OFFSET ${Math.floor(PETS * 0.95)} LIMIT 1`)).rows[0]!.id;
  expect(deepAfterId).toBe(3801); // ids are g: the database had no pets before
});
afterAll(() => server.close());

interface PlanNode {
  'Node Type': string;
  'Parent Relationship'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

/** The due orders' index: holds that ended, which every page checks its pending pets against (orders/sql.ts). */
const DUE = 'orders_placed_expires_at_idx';
/**
 * Without the due orders' parts: their SubPlans, and the range of pending pets whose hold ended that
 * a status page merges in (driven by the due orders, which the sweep keeps few).
 */
const withoutSubPlans = (node: PlanNode): PlanNode => ({ ...node, Plans: node.Plans?.filter((c) => c['Parent Relationship'] !== 'SubPlan').map(withoutSubPlans) });
const withoutDueRange = (node: PlanNode): PlanNode => ({
  ...node,
  Plans: (node['Node Type'] === 'Merge Append' ? node.Plans?.filter((c) => !nodes(c).some((n) => n['Index Name'] === DUE)) : node.Plans)?.map(withoutDueRange),
});
const withoutDue = (node: PlanNode) => withoutDueRange(withoutSubPlans(node));

/** The plan's nodes, less the due orders' parts; every index the whole plan reads is a pets_live_category_ one or the due orders'. */
async function planOf(sql: string, params: unknown[]): Promise<PlanNode[]> {
  const { rows } = await server.app.database.pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
  const indexes = new Set(nodes(plan).flatMap((n) => (n['Index Name'] ? [n['Index Name']] : [])));
  expect([...indexes].filter((i) => i !== DUE && !i.startsWith('pets_live_category_'))).toEqual([]);
  return nodes(withoutDue(plan));
}

/**
 * No Seq Scan; one index access (an Index Scan, or for the few rows a deep page has left a Bitmap
 * Index Scan whose rows are sorted) on a pets_live_category_ index, starting at the cursor: its
 * condition holds the category and `id >`, so the rows before the cursor are never read.
 */
function expectCategoryIndexRange(plan: PlanNode[]) {
  const shape = plan.map((n) => `${n['Node Type']}${n['Index Name'] ? ` on ${n['Index Name']}` : ''}`).join(' > ');
  expect(plan.filter((n) => n['Node Type'] === 'Seq Scan'), shape).toEqual([]);
  const scans = plan.filter((n) => n['Node Type'] === 'Index Scan' || n['Node Type'] === 'Bitmap Index Scan');
  expect(scans, shape).toHaveLength(1);
  expect(scans[0]!['Index Name'], shape).toMatch(/^pets_live_category_/);
  expect(scans[0]!['Index Cond'], shape).toMatch(/category_id = .*id > /);
  return scans[0]!;
}

describe('category pages are served by an index', () => {
  it.each([
    ['the first page', () => 0],
    ['a deep page', () => deepAfterId],
  ])('LIST_BY_CATEGORY, %s: a range of a pets_live_category_ index from the cursor, no Seq Scan', async (_, afterId) => {
    expect(expectCategoryIndexRange(await planOf(LIST_BY_CATEGORY, [afterId(), 21, 7, new Date()]))['Index Name']).toBe('pets_live_category_id_idx');
  });

  it.each([
    ['the first page', () => 0],
    ['a deep page', () => deepAfterId],
  ])('LIST_BY_CATEGORY_AND_STATUS, %s: a range of a pets_live_category_ index from the cursor, no Seq Scan', async (_, afterId) => {
    expect(expectCategoryIndexRange(await planOf(LIST_BY_CATEGORY_AND_STATUS, [afterId(), 21, 7, 'available', new Date()]))['Index Name']).toBe('pets_live_category_status_id_idx');
  });

  it.each([
    ['LIST_BY_CATEGORY', LIST_BY_CATEGORY, [0, 21, 7, new Date()], 'pets_live_category_id_idx'],
    ['LIST_BY_CATEGORY_AND_STATUS', LIST_BY_CATEGORY_AND_STATUS, [0, 21, 7, 'available', new Date()], 'pets_live_category_status_id_idx'],
  ])('%s, first page: an Index Scan in id order that stops at the limit (no Sort)', async (name, sql, params, index) => {
    const plan = await planOf(sql, params);
    // By status, the range is merged in id order with the pending pets whose hold ended.
    const merged = name === 'LIST_BY_CATEGORY_AND_STATUS' ? [['Merge Append', undefined], ['Limit', undefined]] : [];
    expect(plan.map((n) => [n['Node Type'], n['Index Name']])).toEqual([['Limit', undefined], ...merged, ['Index Scan', index]]);
  });

  it('the deep page through the API is exactly the live pets of the category after the cursor', async () => {
    const res = await server.request(`/v1/pets?limit=20&categoryId=7&cursor=${encodeCursor(deepAfterId)}`);
    expect(res.status).toBe(200);
    const { rows } = await server.app.database.pool.query<{ id: number }>(
      'SELECT id::int FROM pets WHERE category_id = 7 AND id > $1 AND deleted_at IS NULL ORDER BY id LIMIT 20',
      [deepAfterId],
    );
    // Pets 3806, 3846, 3886, 3926 and 3966: category 7 (g ≡ 6 mod 40) after the cursor, none of them removed (the multiples of 17 are).
    expect(rows.map((r) => r.id)).toEqual([3806, 3846, 3886, 3926, 3966]);
    expect(res.body.map((p: { id: number }) => p.id)).toEqual(rows.map((r) => r.id));
    expect(res.body.every((p: { categoryId: number }) => p.categoryId === 7)).toBe(true);
  });
});
