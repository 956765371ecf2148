/**
 * The simulator's PostgreSQL (SPEC P6, S3): the PostgreSQL store's own SQL (src/store/pg-store.ts,
 * pg-statements.ts, pg-migrations.ts) run in-process on PGlite, PostgreSQL compiled to WASM, under the
 * virtual clock. A PGlite query is promise-driven to its end (no timer, no I/O callback: measured, it
 * settles in microtask turns alone), so a whole transaction runs inside the loop's drain of one event,
 * as a SQLite transaction runs inside the event itself: the virtual clock never moves under it.
 *
 * Starting PGlite costs a second or more (its WASM), so a process (or check thread) starts one and every
 * seed reuses it: each world gets the database emptied back to what the migrations leave (`freshPglite`),
 * so seeds stay independent and a seed's trace hash repeats whichever seeds ran before it on the thread.
 * Emptying is a TRUNCATE of every table plus the migrations' own rows copied back from a pristine copy
 * taken once (measured cheaper than dropping the schema and migrating again: ~20 ms against ~130 ms).
 * One world at a time uses the database.
 */
import type { PGlite } from '@electric-sql/pglite';
import { importOptional } from '../../src/optional-packages.ts';
import { migratePg } from '../../src/store/pg-migrations.ts';
import { queueLockKey, withPgliteConnection, type PgliteLike } from '../../src/store/pg-store.ts';
import type { TimedFault, PointFault, FaultPlan } from '../faults/plan.ts';
import type { ScenarioSpec } from '../scenario.ts';

/** What needs @electric-sql/pglite, as a MissingDependencyError names it. */
export const PGLITE_FEATURE = "the simulator's PostgreSQL store (--store pglite)";

/** Which database a world runs on: SQLite (the default) or the PostgreSQL store on PGlite. */
export const SIM_STORES = ['sqlite', 'pglite'] as const;
export type SimStore = (typeof SIM_STORES)[number];

/** The store named on a command line, or undefined when it names none of SIM_STORES. */
export function simStoreOf(name: string): SimStore | undefined {
  return (SIM_STORES as readonly string[]).includes(name) ? (name as SimStore) : undefined;
}

/**
 * Faults that act beneath SQLite and have no counterpart on PGlite: the power-loss twin (a SQLite file
 * rolled back to what its disk kept), disk-full (SQLite's max_page_count), io-error (a failed SQLite
 * statement), and busy (a second real SQLite connection holding the write lock).
 */
export const SQLITE_ONLY_FAULTS: ReadonlySet<string> = new Set(['power-loss', 'disk-full', 'io-error', 'busy']);

/** The fault kinds of a plan the store cannot run, with how many of each (sorted by kind). */
export function inapplicableFaults(plan: FaultPlan, store: SimStore): Record<string, number> {
  const counts: Record<string, number> = {};
  if (store === 'sqlite') return counts;
  for (const fault of [...plan.timed, ...plan.points] as (TimedFault | PointFault)[]) {
    if (SQLITE_ONLY_FAULTS.has(fault.kind)) counts[fault.kind] = (counts[fault.kind] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The plan without the faults the store cannot run. */
export function applicablePlan(plan: FaultPlan, store: SimStore): FaultPlan {
  if (store === 'sqlite') return plan;
  return { ...plan, timed: plan.timed.filter((fault) => !SQLITE_ONLY_FAULTS.has(fault.kind)), points: plan.points.filter((fault) => !SQLITE_ONLY_FAULTS.has(fault.kind)) };
}

/** The PGlite database of this thread, and what resetting it needs. */
interface Shared {
  db: PGlite;
  /** The data tables, to truncate; undefined until the first world migrated the database. */
  reset: string | undefined;
  inUse: boolean;
}

let shared: Promise<Shared> | undefined;

/** The schema the queue's tables live in, and the pristine copy of the migrations' rows. */
const PRISTINE = 'leasehold_sim_pristine';

/**
 * This thread's PGlite database, started on first use. Typed as what the store needs of it (PgliteLike),
 * so no declaration of the harness names @electric-sql/pglite, an optional package.
 */
export function simPglite(): Promise<PgliteLike> {
  return sharedPglite().then((state) => state.db);
}

function sharedPglite(): Promise<Shared> {
  shared ??= (async () => {
    // An optional peer dependency, loaded by the first PGlite world: missing, a MissingDependencyError names it.
    const { PGlite: Database } = await importOptional<typeof import('@electric-sql/pglite')>('@electric-sql/pglite', PGLITE_FEATURE);
    const db = new Database();
    await db.waitReady;
    return { db, reset: undefined, inUse: false };
  })();
  return shared;
}

/** What migratePg needs of PGlite (a text without values may hold several statements). */
function session(db: PGlite) {
  return {
    query: async (text: string, values?: unknown[]) => (values === undefined ? ((await db.exec(text)).at(-1) ?? { rows: [] }) : await db.query(text, values)) as { rows: Record<string, unknown>[] },
  };
}

/**
 * Empties the thread's database for a new world, as the migrations leave it, with `now` as the
 * migration time (a SQLite world migrates at open: the same instant). The first call migrates and
 * keeps a pristine copy of every row the migrations wrote; later calls truncate and copy them back.
 * Returns a release to call once the world is done with it.
 */
export async function freshPglite(db: PgliteLike, now: number): Promise<() => void> {
  const state = await sharedPglite();
  if (state.db !== db) throw new Error('freshPglite: not this thread\'s PGlite database');
  if (state.inUse) throw new Error('freshPglite: another world is still using this thread\'s PGlite database (one world at a time)');
  state.inUse = true;
  try {
    // After anything still in flight on the database (the world before closed its store, which waits for its own), before any store of this world.
    await withPgliteConnection(db, () => reset(state, state.db, now));
  } catch (error) {
    state.inUse = false;
    throw error;
  }
  return () => {
    state.inUse = false;
  };
}

async function reset(state: Shared, db: PGlite, now: number): Promise<void> {
  if (state.reset === undefined) {
    await migratePg(session(db), now, queueLockKey(undefined), undefined);
    const tables = (await db.query<{ name: string; rows: number }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)).rows.map((row) => row.name);
    const copies: string[] = [];
    await db.exec(`CREATE SCHEMA ${PRISTINE}`);
    for (const table of tables) {
      if (table === 'schema_migrations') continue;
      const { rows } = await db.query<{ n: number }>(`SELECT COUNT(*)::int4 AS n FROM public."${table}"`);
      if ((rows[0]?.n ?? 0) === 0) continue;
      await db.exec(`CREATE TABLE ${PRISTINE}."${table}" AS SELECT * FROM public."${table}"`);
      copies.push(`INSERT INTO public."${table}" SELECT * FROM ${PRISTINE}."${table}";`);
    }
    const data = tables.filter((table) => table !== 'schema_migrations').map((table) => `public."${table}"`);
    state.reset = `TRUNCATE ${data.join(', ')}; ${copies.join(' ')}`;
  } else {
    await db.exec(`BEGIN; ${state.reset} UPDATE schema_migrations SET applied_at = ${Math.trunc(now)}; COMMIT`);
  }
}

/**
 * Why a scenario cannot run on the store at all, or undefined when it can: its explicit fault plan
 * names a fault that acts beneath SQLite (SQLITE_ONLY_FAULTS), which its expectations are about. A
 * drawn plan (a swarm) runs, with those faults left out and reported (inapplicableFaults).
 */
export function storeSkipReason(spec: ScenarioSpec, store: SimStore): string | undefined {
  if (store === 'sqlite' || !('plan' in spec.faults)) return undefined;
  const kinds = [...new Set(spec.faults.plan.timed.map((fault) => fault.kind).filter((kind) => SQLITE_ONLY_FAULTS.has(kind)))].sort();
  if (kinds.length === 0) return undefined;
  return `its fault plan needs ${kinds.join(', ')}, which act${kinds.length === 1 ? 's' : ''} beneath SQLite and do${kinds.length === 1 ? 'es' : ''} not apply to ${store}`;
}

/** Coverage marks only the SQLite-only faults reach: not demanded of a run on another store (sim/check/coverage.ts). */
export const SQLITE_ONLY_MARKS: ReadonlySet<string> = new Set(['power_loss', 'power_loss_lost_commits', 'busy_rejected', 'disk_full', 'io_error']);
