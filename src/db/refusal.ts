/**
 * A write function's refusal (migration 018's `refuse`): SQLSTATE 'ASREF', the error code as the
 * message, what the answer names as JSON in the detail. Raising rolled the whole call back; the
 * capability that called it answers with the code and its own sentence.
 */
export interface Refusal {
  code: string;
  detail: Record<string, unknown>;
}

const REFUSED = 'ASREF';

export function refusalOf(err: unknown): Refusal | undefined {
  const e = err as { code?: unknown; message?: unknown; detail?: unknown };
  if (e?.code !== REFUSED || typeof e.message !== 'string') return undefined;
  return { code: e.message, detail: typeof e.detail === 'string' && e.detail ? (JSON.parse(e.detail) as Record<string, unknown>) : {} };
}

/**
 * Runs a write function's call (one statement: `SELECT f(…) AS r`, its own transaction) and answers
 * its result; a refusal is thrown as `answer` makes it, any other error as it came.
 */
export async function callWrite<R>(db: { query: (sql: string, params: unknown[]) => Promise<{ rows: Array<{ r: R }> }> }, sql: string, params: unknown[], answer: (refusal: Refusal) => Error): Promise<R> {
  try {
    return (await db.query(sql, params)).rows[0]!.r;
  } catch (err) {
    const refusal = refusalOf(err);
    throw refusal ? answer(refusal) : err;
  }
}
