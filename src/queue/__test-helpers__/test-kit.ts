/**
 * Test-only helpers shared by the queue's unit suites (src/queue/*.test.ts). Nothing in production
 * imports this file. Time comes from a hand-driven clock and randomness from a fixed sequence, so every
 * test is exact: the queue reads time and randomness only through its ports.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Database } from 'better-sqlite3';
import { VirtualClock } from '../../../sim/clock.ts';
import type { Random } from '../../ports.ts';
import { ClosedError } from '../errors.ts';
import { canReopen, canTransition } from '../states.ts';
import type { Store } from '../../store/store.ts';
import { YieldingSqliteStore } from '../../store/__test-helpers__/yielding-store.ts';
import { freshPgliteStore, freshPgStore } from '../../store/__test-helpers__/pg-test-store.ts';
import { openWorkQueue } from '../../work-queue.ts';
import type { ClaimedTask, EnqueueRequest, QueueConfig, TaskState, WorkQueue } from '../types.ts';

export const T0 = 1_700_000_000_000;

/**
 * The one virtual clock (sim/clock.ts), moved only when the test says so. Tests are not shipped, so
 * they may use the simulator's clock; the queue under test still sees nothing but the Clock port.
 * `t` and `advance` are the wall reading these suites were written against: a step back (a negative
 * advance, or setting `t` lower) is a clock jump, since the timeline itself never goes back.
 */
export class ManualClock extends VirtualClock {
  constructor(startMs: number = T0) {
    super(startMs);
  }

  get t(): number {
    return this.now();
  }

  set t(wallMs: number) {
    const deltaMs = wallMs - this.now();
    if (deltaMs >= 0) this.advanceBy(deltaMs);
    else this.jump(deltaMs);
  }

  advance(ms: number): number {
    this.t = this.now() + ms;
    return this.t;
  }
}

/** Replays `values` in order (the last one repeats) and counts how often it was asked. */
export class SequenceRandom implements Random {
  calls = 0;
  constructor(private readonly values: readonly number[] = [0.5]) {}
  next(): number {
    const value = this.values[Math.min(this.calls, this.values.length - 1)] ?? 0.5;
    this.calls++;
    return value;
  }
}

export interface TestQueue {
  queue: WorkQueue;
  clock: ManualClock;
  random: SequenceRandom;
}

const opened: WorkQueue[] = [];

/**
 * The stores the contract suite runs against (SPEC P1): vitest.config.ts runs the contract files once
 * per entry, with LEASEHOLD_TEST_STORE naming it. Each gives a fresh, empty database target. A second
 * store (PostgreSQL) is one more entry here and one more project there.
 */
export const TEST_STORES = {
  /** SQLite in memory: the default, and what a test without a store name gets. */
  'sqlite-memory': () => ':memory:',
  /** SQLite on a WAL file: the embedded store as production opens it. */
  'sqlite-file': () => {
    const directory = mkdtempSync(join(tmpdir(), 'leasehold-contract-'));
    scratch.push(directory);
    return join(directory, 'queue.sqlite');
  },
  /** SQLite behind an asynchronous driver: every statement an await point, as PostgreSQL's will be. */
  'sqlite-yielding': () => YieldingSqliteStore.open(':memory:'),
  /** PostgreSQL (LEASEHOLD_PG_URL: the machine's server in CI, else a throwaway one from vitest's global setup): a fresh schema per queue, dropped when the queue closes. */
  postgres: () => freshPgStore(),
  /** PostgreSQL's SQL on PGlite in-process (P6): the same driver, statements and migrations, one shared database per test process, a fresh schema per queue. */
  pglite: () => freshPgliteStore(),
} as const satisfies Record<string, () => string | Store>;

export type TestStoreName = keyof typeof TEST_STORES;

const scratch: string[] = [];

/** The store this run of the contract suite is for (LEASEHOLD_TEST_STORE), or an error naming the choices. */
export function testStoreName(env: NodeJS.ProcessEnv = process.env): TestStoreName {
  const name = env.LEASEHOLD_TEST_STORE ?? 'sqlite-memory';
  if (!Object.hasOwn(TEST_STORES, name)) throw new Error(`LEASEHOLD_TEST_STORE=${name}: expected one of ${Object.keys(TEST_STORES).join(', ')}`);
  return name as TestStoreName;
}

/** A fresh database target on this run's store. */
export function testStoreTarget(): string | Store {
  return TEST_STORES[testStoreName()]();
}

/** Opens a queue on this run's store (or the given target) with a manual clock and a fixed random sequence. */
export function openTestQueue(
  options: { config?: Partial<QueueConfig>; random?: SequenceRandom; db?: string | Database; clock?: ManualClock } = {},
): TestQueue {
  const clock = options.clock ?? new ManualClock();
  const random = options.random ?? new SequenceRandom();
  const queue = openWorkQueue({ db: options.db ?? testStoreTarget(), clock, random, ...(options.config ? { config: options.config } : {}) });
  opened.push(queue);
  return { queue, clock, random };
}

/**
 * Run after every test: checks the event log of every queue the test opened (Q15) and closes it.
 * Register with `afterEach(checkAndCloseQueues)`.
 */
export async function checkAndCloseQueues(): Promise<void> {
  const queues = opened.splice(0);
  try {
    for (const queue of queues) {
      try {
        await assertEventLogConsistent(queue);
      } catch (error) {
        if (!(error instanceof ClosedError)) throw error;
      }
    }
  } finally {
    for (const queue of queues) await queue.close();
    for (const directory of scratch.splice(0)) rmSync(directory, { recursive: true, force: true });
  }
}

let topicCounter = 0;

/** A valid enqueue request; every call gets a fresh topic unless one is given. */
export function request(overrides: Partial<EnqueueRequest> = {}): EnqueueRequest {
  topicCounter++;
  return { tenant: 'acme', topic: `topic-${topicCounter}`, version: 1, priority: 0, input: { text: 'hello' }, ...overrides };
}

/** Runs `call` on each item one after another (each queue call is its own transaction) and collects the answers. */
export async function inOrder<T, R>(items: readonly T[], call: (item: T) => Promise<R>): Promise<R[]> {
  const answers: R[] = [];
  for (const item of items) answers.push(await call(item));
  return answers;
}

export async function enqueueOk(queue: WorkQueue, overrides: Partial<EnqueueRequest> = {}): Promise<number> {
  const result = await queue.enqueue(request(overrides));
  if (!result.ok) throw new Error(`enqueue failed: ${result.error}: ${result.message}`);
  return result.taskId;
}

export async function claimOk(queue: WorkQueue, workerId: string): Promise<ClaimedTask> {
  const result = await queue.claim(workerId);
  if (!result.ok) throw new Error(`claim by ${workerId} found nothing: ${result.reason}`);
  return result.task;
}

/** Everything an observer can read: used to prove that a refused call changed nothing anywhere. */
export async function fingerprint(queue: WorkQueue): Promise<unknown> {
  const snapshot = await queue.snapshot();
  return { snapshot, events: await queue.allEvents(), rejections: await queue.rejections() };
}

/** The event types that record a state change, each carrying `to` (and `from`, except the first). */
export const TRANSITION_EVENT_TYPES = new Set([
  'enqueued',
  'superseded',
  'claimed',
  'completed',
  'retry_scheduled',
  'failed',
  'lease_expired',
  'stop_confirmed',
  'cancelled',
  'expired',
  // R5 and R8 (src/runs/reconciler.ts) move tasks too.
  'reconciled',
  'interrupted',
  // O1: an operator's redrive of a dead letter (states.ts REOPENING_EDGES).
  'redriven',
]);

/** Every (from, to) pair recorded by the transition events of all tasks. */
export async function recordedTransitions(queue: WorkQueue): Promise<Set<string>> {
  const edges = new Set<string>();
  for (const event of (await queue.allEvents())) {
    if (!TRANSITION_EVENT_TYPES.has(event.type) || event.data.from === undefined) continue;
    edges.add(`${String(event.data.from)}->${String(event.data.to)}`);
  }
  return edges;
}

/**
 * Q15: per task, seq runs 1..n without gaps; the transition events form one path through the state
 * machine (each `from` is the previous `to`, each edge is legal) that ends in the task's current state.
 */
export async function assertEventLogConsistent(queue: WorkQueue): Promise<void> {
  const snapshot = await queue.snapshot();
  for (const task of snapshot.tasks) {
    const events = await queue.events(task.id);
    expect(
      events.map((event) => event.seq),
      `task ${task.id} seq`,
    ).toEqual(events.map((_, index) => index + 1));
    let state: TaskState | undefined;
    for (const event of events) {
      expect(event.taskId).toBe(task.id);
      if (!TRANSITION_EVENT_TYPES.has(event.type)) continue;
      const to = event.data.to as TaskState;
      if (state === undefined) {
        expect(['ready', 'superseded'], `task ${task.id} first event ${event.type}`).toContain(to);
        expect(event.data.from).toBeUndefined();
      } else {
        expect(event.data.from, `task ${task.id} event ${event.seq} ${event.type}`).toBe(state);
        // A redrive is the one way out of an end, and only by its own event (an operator's edge).
        const legal = event.type === 'redriven' ? canReopen(state, to) : canTransition(state, to);
        expect(legal, `task ${task.id}: ${state} -> ${to} is not an edge`).toBe(true);
      }
      state = to;
    }
    expect(state, `task ${task.id} final state`).toBe(task.state);
  }
  const counted = Object.values(snapshot.countsByState).reduce((sum, n) => sum + n, 0);
  expect(counted).toBe(snapshot.tasks.length);
  const { ready, running, uncertain } = snapshot.countsByState;
  expect(snapshot.live).toBe(ready + running + uncertain);
  expect(snapshot.occupied.global).toBe(running + uncertain);
}
