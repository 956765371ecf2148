/**
 * Test-only: the store contract suite's harness (issue 36 item 4; River's `riverdrivertest` is the
 * model). Every StoreTx method is tested directly, statement by statement, against each kind of store:
 * SQLite in memory, SQLite on a WAL file, PostgreSQL (the run's server, a fresh schema) and PostgreSQL's
 * SQL on PGlite. A test file opens one store of each kind for its whole run (`contractStore`, in a
 * `describe.each(STORE_KINDS)`), and each case runs its body in a write transaction that is rolled back
 * at its end (`scratch`), so every case starts from the empty, migrated database without paying for a
 * migration; a case that needs a commit (or a read transaction) uses `commit` and `read` on data of its own.
 *
 * A body is what the queue's own bodies are: a generator over StoreTx whose statements are
 * `yield* tx.method(...)`. The fixtures below (readyTask, claim, ...) are such statements strung
 * together the way the queue strings them, so the rows they leave satisfy the schema's CHECKs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll } from 'vitest';
import { PgStore } from '../../pg-store.ts';
import { SqliteStore } from '../../sqlite-store.ts';
import type { HoldClosure, NewTask, Step, Store, StoreTx, TransactionBody } from '../../store.ts';
import { freshPgStore } from '../../__test-helpers__/pg-test-store.ts';

/** The kinds of store every contract case runs on. */
export const STORE_KINDS = ['sqlite-memory', 'sqlite-file', 'postgres', 'pglite'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/** The transaction time every scratch and commit body is given (a store never reads a clock of its own). */
export const AT = 1_700_000_000_000;

/** A body over one transaction, as the queue writes them, with what it reads first if it says so. */
export type Body<T> = TransactionBody<T>;

/** Thrown at the end of a scratch body so that its transaction rolls back; carries the body's answer out. */
class Rollback<T> extends Error {
  constructor(readonly value: T) {
    super('contract scratch: rolled back on purpose');
  }
}

function openStore(kind: StoreKind, scratchDirs: string[]): Store {
  switch (kind) {
    case 'sqlite-memory':
      return SqliteStore.open(':memory:', { busyTimeoutMs: 1_000, busyRetries: 0 }, () => 0);
    case 'sqlite-file': {
      const directory = mkdtempSync(join(tmpdir(), 'leasehold-store-contract-'));
      scratchDirs.push(directory);
      // Its watch hears this process's commits only: a file watcher's notices would come at times of their own.
      return SqliteStore.open(join(directory, 'queue.sqlite'), { busyTimeoutMs: 1_000, busyRetries: 0, watchOtherProcesses: false }, () => 0);
    }
    case 'postgres':
      // A fresh schema of the run's server (LEASEHOLD_PG_URL, or vitest's throwaway one), dropped on close.
      return freshPgStore({ busyRetries: 0 });
    case 'pglite': {
      // A database of this file's own (pg-test-store's shared one passes no watch through), closed with the store.
      const database = new PGlite();
      const inner = PgStore.open(database, { busyRetries: 0, schema: 'lh_contract' }, () => 0);
      return {
        kind: 'pglite',
        write: (operation, readClock, body) => inner.write(operation, readClock, body),
        read: (operation, body) => inner.read(operation, body),
        watch: (listener) => inner.watch(listener),
        async close() {
          await inner.close();
          await database.close();
        },
      };
    }
  }
}

export interface ContractStore {
  readonly kind: StoreKind;
  /** Whether this is one of the PostgreSQL kinds (postgres, pglite). */
  readonly postgres: boolean;
  /** Runs `body` in a write transaction at AT and rolls it back: the database is as before; the body's answer is returned. */
  scratch<T>(body: Body<T>): Promise<T>;
  /** Runs `body` in a write transaction at AT and commits it. */
  commit<T>(body: Body<T>): Promise<T>;
  /** Runs `body` as a read transaction. */
  read<T>(body: (tx: StoreTx) => Step<T>): Promise<T>;
  /** The store itself (for what is not a transaction: watch). */
  store(): Store;
}

/**
 * One store of `kind` for the describe block this is called in: opened before its first case (and
 * migrated), closed (its schema or file removed) after its last.
 */
export function contractStore(kind: StoreKind): ContractStore {
  let store: Store | undefined;
  const dirs: string[] = [];
  beforeAll(async () => {
    store = openStore(kind, dirs);
    // The PostgreSQL stores migrate on their first transaction: take that cost here, not in a case.
    await store.read('contract:open', function* (tx) {
      return yield* tx.counterLive();
    });
  });
  afterAll(async () => {
    await store?.close();
    for (const directory of dirs) rmSync(directory, { recursive: true, force: true });
  });
  const opened = (): Store => {
    if (store === undefined) throw new Error('contract store used outside its describe block');
    return store;
  };
  return {
    kind,
    postgres: kind === 'postgres' || kind === 'pglite',
    async scratch<T>(body: Body<T>): Promise<T> {
      try {
        const rolledBack = function* (tx: StoreTx, at: number): Step<never> {
          throw new Rollback(yield* body(tx, at));
        };
        // What the body says it reads first (store.ts ReadsFirst) goes with it.
        await opened().write('contract:scratch', () => AT, body.readsFirst === undefined ? rolledBack : Object.assign(rolledBack, { readsFirst: body.readsFirst }));
      } catch (error) {
        if (error instanceof Rollback) return error.value as T;
        throw error;
      }
      throw new Error('a scratch body committed');
    },
    commit<T>(body: Body<T>): Promise<T> {
      return opened().write('contract:commit', () => AT, body);
    },
    read<T>(body: (tx: StoreTx) => Step<T>): Promise<T> {
      return opened().read('contract:read', body);
    },
    store: opened,
  };
}

// ---- fixtures: statements strung together as the queue strings them

let keys = 0;

/** A NewTask of a fresh topic (tenant 'acme', version 1, ready, holding 10 credits), with `overrides`. */
export function newTask(overrides: Partial<NewTask> = {}): NewTask {
  keys++;
  return {
    tenant: 'acme',
    topic: `topic-${keys}`,
    version: 1,
    inputHash: `hash-${keys}`,
    priority: 0,
    inputJson: '{"text":"hello"}',
    store: null,
    tier: 'standard',
    deadline: null,
    contextJson: null,
    state: 'ready',
    now: AT,
    holdCredits: 10,
    needsJson: null,
    critical: 0,
    hold: null,
    ...overrides,
  };
}

/** Inserts a ready task; its id (the insert must not be refused). */
export function* readyTask(tx: StoreTx, overrides: Partial<NewTask> = {}): Step<number> {
  const id = yield* tx.taskCreate(newTask(overrides));
  if (id === undefined) throw new Error('fixture: the insert was refused');
  return id;
}

export interface Claim {
  workerId?: string;
  generation?: number;
  leaseUntil?: number;
  now?: number;
  eventSeq?: number;
}

/** Claims a ready task of generation `generation - 1` (the claim's state write); the fence of its holder. */
export function* claim(tx: StoreTx, id: number, options: Claim = {}): Step<{ id: number; workerId: string; generation: number; now: number }> {
  const workerId = options.workerId ?? 'w1';
  const generation = options.generation ?? 1;
  const now = options.now ?? AT;
  const written = yield* tx.taskWriteState({
    kind: 'claim',
    id,
    previousGeneration: generation - 1,
    workerId,
    generation,
    leaseUntil: options.leaseUntil ?? now + 30_000,
    eventSeq: options.eventSeq ?? 2,
    now,
  });
  if (written === undefined) throw new Error('fixture: the claim missed');
  return { id, workerId, generation, now };
}

/** Moves a running task to uncertain, keeping its lease (an expiry); the new event_seq. */
export function* makeUncertain(tx: StoreTx, id: number, generation = 1): Step<number> {
  const seq = yield* tx.taskWriteState({ kind: 'other', id, from: 'running', generation, to: 'uncertain', outcome: null, finishedAt: null, keepLease: true, hold: null });
  if (seq === undefined) throw new Error('fixture: the move to uncertain missed');
  return seq;
}

/** A hold released with nothing charged. */
export const RELEASED: HoldClosure = { state: 'released', charged: 0, usage: null, reason: 'no_checkpoint' };

/** Ends a running task by its holder (fenced at `now`), closing its hold as `hold` says. */
export function* endByHolder(
  tx: StoreTx,
  fence: { id: number; workerId: string; generation: number; now: number },
  to: 'done' | 'failed' | 'cancelled' | 'expired',
  options: { hold?: HoldClosure; eventSeq?: number; result?: string } = {},
): Step<number | undefined> {
  return yield* tx.taskWriteState({
    kind: 'holder',
    fence,
    to,
    eventSeq: options.eventSeq ?? 3,
    result: to === 'done' ? (options.result ?? '"ok"') : null,
    outcome: to === 'done' ? 'done' : to,
    errorClass: to === 'failed' ? 'boom' : null,
    errorMessage: to === 'failed' ? 'it broke' : null,
    notBefore: fence.now,
    finishedAt: fence.now,
    hold: options.hold ?? RELEASED,
  });
}

/** A failed task (claimed, then failed by its holder); its id. */
export function* failedTask(tx: StoreTx, overrides: Partial<NewTask> = {}): Step<number> {
  const id = yield* readyTask(tx, overrides);
  const fence = yield* claim(tx, id);
  if ((yield* endByHolder(tx, fence, 'failed')) === undefined) throw new Error('fixture: the failure missed');
  return id;
}

/** What a promise settles to, as a value: `{ value }` or `{ error }` (for cases whose dialects differ in how a miss surfaces). */
export async function settled<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

/** Sorts rows by the JSON of their keys, for statements whose order the interface does not promise. */
export function sortedBy<T>(rows: readonly T[], key: (row: T) => string | number): T[] {
  return [...rows].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}
