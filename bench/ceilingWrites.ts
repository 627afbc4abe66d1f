/**
 * The ceiling's writes in one round trip each (issue 45): PL/pgSQL functions, made by the ceiling in
 * the benchmark's database at start, that EXECUTE the service's own statements (src/pets/sql.ts,
 * src/orders/sql.ts, src/events/sql.ts's event tail, which writes the delivery intents to the outbox) in the order its
 * repositories run them, with the same checks, events and delivery intents: the same database work,
 * one `SELECT f(…)` (its own transaction) instead of a statement per round trip. Each statement
 * takes its own snapshot, as the service's do in its READ COMMITTED transaction. A refusal raises
 * its status code (`'404'`…), which rolls the whole write back, as the service's error does.
 */
import { eventFrom } from '../src/events/sql.js';
import * as orders from '../src/orders/sql.js';
import { CREATE_WITH_EVENT, HOLDING_ORDER, LOCK, UPDATE } from '../src/pets/sql.js';

/** src/events/repository.ts's RECORD (not exported there), built the same way: $1 type, $2 object, $3 readers. */
const RECORD = `WITH given AS (SELECT), ${eventFrom('given', { type: '$1::text', object: '$2::jsonb', recipients: '$3::bigint[]' })}`;

const lit = (sql: string) => `'${sql.replace(/'/g, "''")}'`;

/** The statements creating the functions. */
export function ceilingFunctions(): string {
  return `
-- src/events/repository.ts record(): the event, its readers and its delivery intents (the outbox), one statement.
CREATE OR REPLACE FUNCTION bench_record(p_type text, p_object jsonb, p_recipients bigint[]) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
  EXECUTE ${lit(RECORD)} INTO r USING p_type, p_object, p_recipients;
END $f$;

-- src/orders/expiry.ts releaseLapsedHold(): the pet's placed order whose hold ended, with its events.
CREATE OR REPLACE FUNCTION bench_release_hold(p_now timestamptz, p_pet bigint) RETURNS void LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
  FOR r IN EXECUTE ${lit(orders.RELEASE_PET_HOLD)} USING p_now, p_pet LOOP
    PERFORM bench_record('order.expired', r."order", ARRAY[r.owner::bigint, (r.pet->>'createdBy')::bigint]);
    PERFORM bench_record('pet.updated', r.pet - 'createdBy', ARRAY[(r.pet->>'createdBy')::bigint]);
  END LOOP;
END $f$;

-- src/pets/repository.ts create().
CREATE OR REPLACE FUNCTION bench_create_pet(p_name text, p_category bigint, p_status text, p_owner bigint) RETURNS jsonb LANGUAGE plpgsql AS $f$
DECLARE r record;
BEGIN
  EXECUTE ${lit(CREATE_WITH_EVENT)} INTO r USING p_name, p_category, p_status, p_owner;
  RETURN to_jsonb(r) - 'eventId' - 'queued';
END $f$;

-- src/pets/repository.ts update() (no If-Match: the benchmark sends none).
CREATE OR REPLACE FUNCTION bench_update_pet(p_id bigint, p_name text, p_category bigint, p_status text, p_owner bigint, p_now timestamptz) RETURNS jsonb LANGUAGE plpgsql AS $f$
DECLARE pet record; r record; n int;
BEGIN
  PERFORM bench_release_hold(p_now, p_id);
  EXECUTE ${lit(LOCK)} INTO pet USING p_id;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 0 THEN RAISE EXCEPTION '404'; END IF;
  IF pet."createdBy" IS DISTINCT FROM p_owner THEN RAISE EXCEPTION '403'; END IF;
  IF (p_name IS NULL OR p_name = pet.name) AND (p_category IS NULL OR p_category = pet."categoryId") AND (p_status IS NULL OR p_status = pet.status) THEN
    RETURN to_jsonb(pet) - 'createdBy';
  END IF;
  IF p_status IS NOT NULL AND p_status <> pet.status THEN
    EXECUTE ${lit(HOLDING_ORDER)} INTO r USING p_id;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN RAISE EXCEPTION '409'; END IF;
  END IF;
  EXECUTE ${lit(UPDATE)} INTO r USING p_id, p_name, p_category, p_status;
  PERFORM bench_record('pet.updated', to_jsonb(r) - 'version', ARRAY[p_owner]);
  RETURN to_jsonb(r);
END $f$;

-- src/orders/repository.ts place() and recordChange().
CREATE OR REPLACE FUNCTION bench_place_order(p_pet bigint, p_owner bigint, p_max bigint, p_hold int, p_now timestamptz) RETURNS jsonb LANGUAGE plpgsql AS $f$
DECLARE o record; pet record; n int;
BEGIN
  EXECUTE ${lit(orders.LOCK_OWNER)} USING p_owner;
  PERFORM bench_release_hold(p_now, p_pet);
  EXECUTE ${lit(orders.PLACE)} INTO o USING p_pet, p_owner, p_max, p_hold, p_now;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n = 0 THEN
    EXECUTE ${lit(orders.PET_STATUS)} INTO pet USING p_pet;
    GET DIAGNOSTICS n = ROW_COUNT;
    RAISE EXCEPTION '%', CASE WHEN n = 0 THEN '404' ELSE '409' END;
  END IF;
  EXECUTE ${lit(orders.PET_AFTER)} INTO pet USING o."petId";
  PERFORM bench_record('order.placed', to_jsonb(o), ARRAY[p_owner, pet."createdBy"]);
  PERFORM bench_record('pet.updated', to_jsonb(pet) - 'createdBy', ARRAY[pet."createdBy"]);
  RETURN to_jsonb(o);
END $f$;
`;
}

/** The status a function's refusal raised (`'404'`…), if the error is one. */
export const refusalOf = (err: unknown): number | undefined => {
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && /^[1-5]\d\d$/.test(message) ? Number(message) : undefined;
};
