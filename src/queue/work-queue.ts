import type { Database } from 'better-sqlite3';
import { CryptoRandom } from '../adapters/random.ts';
import type { Clock, Random } from '../ports.ts';
import { migrate } from '../store/migrations.ts';
import { prepareStatements, tasksInState, type TaskRow } from '../store/statements.ts';
import { lastCheckpoint, writeCheckpoint } from './checkpoints.ts';
import { claim, expireOverdueLeases } from './claim.ts';
import { resolveConfig } from './config.ts';
import { now, requireTaskId, type QueueContext } from './context.ts';
import { enqueue } from './enqueue.ts';
import { ClosedError, ConfigError, InputError } from './errors.ts';
import { acknowledgeCancel, appendEvent, complete, fail, heartbeat } from './holder-writes.ts';
import { groupIncidentCandidates } from './incidents.ts';
import { openDatabase } from './open-database.ts';
import { cancel, confirmStopped } from './operator.ts';
import { TRANSITIONS } from './states.ts';
import { toTaskEvent, toTaskView, type EventRow } from './views.ts';
import { makeWriter, readWithRetry } from './transaction.ts';
import type { DeadLetter, HoldView, QueueConfig, Rejection, Snapshot, TaskState, TaskView, Tier, Usage, WorkQueue } from './types.ts';
import { effectResult, listEffects, recordEffect } from '../runs/effects.ts';
import { interrupt, reconcile } from '../runs/reconciler.ts';

interface HoldRow {
  task_id: number;
  tenant: string;
  tier: string;
  credits: number;
  state: 'held' | 'settled' | 'released';
  charged_credits: number | null;
  usage: string | null;
  reason: string | null;
  held_at: number;
  closed_at: number | null;
}

interface DeadLetterRow {
  task_id: number;
  tenant: string;
  topic: string;
  version: number;
  reason: string;
  reasons: string;
  at: number;
}

export interface OpenWorkQueueOptions {
  /** A file path, ':memory:', or a better-sqlite3 handle (which the caller keeps and closes). */
  db: string | Database;
  clock: Clock;
  /** Defaults to the OS CSPRNG; the simulator passes a seeded stream. */
  random?: Random;
  config?: Partial<QueueConfig>;
}

/**
 * Opens a durable work queue. The schema is migrated idempotently, statements are prepared once,
 * and every decision reads time from `clock` and randomness from `random`, never from the system.
 */
export function openWorkQueue(options: OpenWorkQueueOptions): WorkQueue {
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'expected { db, clock, random?, config? }');
  const config = resolveConfig(options.config ?? {});
  if (options.clock === null || typeof options.clock?.now !== 'function') throw new ConfigError('clock', 'expected a Clock with now()');
  if (options.random !== undefined && typeof options.random?.next !== 'function') {
    throw new ConfigError('random', 'expected a Random with next()');
  }
  const { db, owned } = openDatabase(options.db, config.busyTimeoutMs);
  try {
    const context: QueueContext = {
      db,
      config,
      clock: options.clock,
      random: options.random ?? new CryptoRandom(),
      write: undefined as never,
      read: (operation, read) => readWithRetry(operation, config.busyRetries, read),
      statements: undefined as never,
    };
    context.write = makeWriter(db, config.busyRetries, () => now(context));
    context.write('migrate', (at) => migrate(db, at));
    context.statements = prepareStatements(db);
    return new SqliteWorkQueue(context, owned);
  } catch (error) {
    if (owned) db.close();
    throw error;
  }
}

class SqliteWorkQueue implements WorkQueue {
  private closed = false;

  constructor(
    private readonly context: QueueContext,
    private readonly ownsDatabase: boolean,
  ) {}

  get config(): Readonly<QueueConfig> {
    return this.context.config;
  }

  private open(): QueueContext {
    if (this.closed) throw new ClosedError();
    return this.context;
  }

  enqueue: WorkQueue['enqueue'] = (request) => enqueue(this.open(), request);
  claim: WorkQueue['claim'] = (workerId) => claim(this.open(), workerId);
  heartbeat: WorkQueue['heartbeat'] = (taskId, workerId, generation) => heartbeat(this.open(), taskId, workerId, generation);
  complete: WorkQueue['complete'] = (taskId, workerId, generation, result) => complete(this.open(), taskId, workerId, generation, result);
  fail: WorkQueue['fail'] = (taskId, workerId, generation, failure) => fail(this.open(), taskId, workerId, generation, failure);
  appendEvent: WorkQueue['appendEvent'] = (taskId, workerId, generation, type, data) =>
    appendEvent(this.open(), taskId, workerId, generation, type, data);
  acknowledgeCancel: WorkQueue['acknowledgeCancel'] = (taskId, workerId, generation) =>
    acknowledgeCancel(this.open(), taskId, workerId, generation);
  checkpoint: WorkQueue['checkpoint'] = (taskId, workerId, generation, write) =>
    writeCheckpoint(this.open(), taskId, workerId, generation, write);
  lastCheckpoint: WorkQueue['lastCheckpoint'] = (taskId) => lastCheckpoint(this.open(), taskId);
  effectResult: WorkQueue['effectResult'] = (requestKey) => effectResult(this.open(), requestKey);
  recordEffect: WorkQueue['recordEffect'] = (taskId, workerId, generation, effect) => recordEffect(this.open(), taskId, workerId, generation, effect);
  reconcile: WorkQueue['reconcile'] = () => reconcile(this.open());
  interrupt: WorkQueue['interrupt'] = (taskId, workerId, generation, reason) => interrupt(this.open(), taskId, workerId, generation, reason);
  effects: WorkQueue['effects'] = () => listEffects(this.open());

  holds(): HoldView[] {
    const context = this.open();
    return context.read('holds', () =>
      (context.statements.holds.all() as HoldRow[]).map((row) => ({
        taskId: row.task_id,
        tenant: row.tenant,
        tier: row.tier as Tier,
        credits: row.credits,
        state: row.state,
        chargedCredits: row.charged_credits,
        usage: row.usage === null ? null : (JSON.parse(row.usage) as Usage),
        reason: row.reason,
        heldAt: row.held_at,
        closedAt: row.closed_at,
      })),
    );
  }

  deadLetters(): DeadLetter[] {
    const context = this.open();
    return context.read('deadLetters', () =>
      (context.statements.deadLetters.all() as DeadLetterRow[]).map((row) => ({
        taskId: row.task_id,
        tenant: row.tenant,
        topic: row.topic,
        version: row.version,
        reason: row.reason,
        reasons: JSON.parse(row.reasons) as string[],
        at: row.at,
      })),
    );
  }

  confirmStopped: WorkQueue['confirmStopped'] = (taskId, generation, source) => confirmStopped(this.open(), taskId, generation, source);
  cancel: WorkQueue['cancel'] = (taskId) => cancel(this.open(), taskId);

  expireLeases(): number {
    const context = this.open();
    return context.write('expireLeases', (at) => expireOverdueLeases(context, at));
  }

  get(taskId: number): TaskView | undefined {
    const context = this.open();
    const id = requireTaskId(taskId);
    const row = context.read('get', () => context.statements.taskById.get(id) as TaskRow | undefined);
    return row === undefined ? undefined : toTaskView(row);
  }

  events(taskId: number) {
    const context = this.open();
    const id = requireTaskId(taskId);
    return context.read('events', () => (context.statements.eventsForTask.all(id) as EventRow[]).map(toTaskEvent));
  }

  eventCursor(): number {
    const context = this.open();
    return context.read('eventCursor', () => context.statements.eventCursor.get() as number);
  }

  eventsSince(cursor: number, limit = 1_000) {
    const context = this.open();
    if (!Number.isSafeInteger(cursor) || cursor < 0) throw new InputError('cursor', 'expected a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1) throw new InputError('limit', 'expected a positive integer');
    return context.read('eventsSince', () => (context.statements.eventsSince.all(cursor, limit) as EventRow[]).map(toTaskEvent));
  }

  allEvents() {
    const context = this.open();
    return context.read('allEvents', () => (context.statements.allEvents.all() as EventRow[]).map(toTaskEvent));
  }

  /** Q19: only this tenant's rows, selected by the tenant key in SQL, never filtered afterwards. */
  listForTenant(tenant: string): TaskView[] {
    const context = this.open();
    if (typeof tenant !== 'string' || tenant === '') throw new InputError('tenant', 'expected a non-empty string');
    return context.read('listForTenant', () => (context.statements.tasksForTenant.all(tenant) as TaskRow[]).map(toTaskView));
  }

  liveCount(): number {
    const context = this.open();
    return context.read('liveCount', () => context.statements.liveCount.get() as number);
  }

  tasksInState(state: TaskState): TaskView[] {
    const context = this.open();
    if (!(state in TRANSITIONS)) throw new InputError('state', `expected one of ${Object.keys(TRANSITIONS).join(', ')}`);
    return context.read('tasksInState', () => (tasksInState(context.statements, state) as TaskRow[]).map(toTaskView));
  }

  rejections(): Rejection[] {
    const context = this.open();
    return context.read('rejections', () => context.statements.rejections.all() as Rejection[]);
  }

  /** Q19: the admin view across tenants. Never hand it to a tenant. */
  snapshot(): Snapshot {
    const context = this.open();
    const at = now(context);
    return context.read('snapshot', () => {
      const { statements } = context;
      const tasks = (statements.allTasks.all() as TaskRow[]).map(toTaskView);
      const countsByState = { ready: 0, running: 0, uncertain: 0, done: 0, failed: 0, superseded: 0, cancelled: 0, expired: 0 };
      for (const { state, n } of statements.countsByState.all() as { state: TaskState; n: number }[]) countsByState[state] = n;
      // fromEntries defines own properties, so a tenant called "__proto__" is kept as a key.
      const occupiedRows = statements.occupiedByTenant.all() as { tenant: string; n: number }[];
      const byTenant: Record<string, number> = Object.fromEntries(occupiedRows.map(({ tenant, n }) => [tenant, n]));
      return {
        at,
        tasks,
        countsByState,
        live: statements.liveCount.get() as number,
        occupied: { global: countsByState.running + countsByState.uncertain, byTenant },
        rejections: statements.rejections.all() as Rejection[],
      };
    });
  }

  incidentCandidates(range: { from: number; to: number; minGroupSize?: number }) {
    const context = this.open();
    const { from, to, minGroupSize = 2 } = range ?? ({} as never);
    if (!Number.isFinite(from)) throw new InputError('from', 'expected a time in ms');
    if (!Number.isFinite(to) || to < from) throw new InputError('to', 'expected a time in ms not before from');
    if (!Number.isSafeInteger(minGroupSize) || minGroupSize < 1) throw new InputError('minGroupSize', 'expected a positive integer');
    return context.read('incidentCandidates', () => {
      const { statements } = context;
      const rows = statements.tasksEnqueuedBetween.all(from, to) as TaskRow[];
      const latest = (tenant: string, topic: string) => statements.latestVersionOfTopic.get(tenant, topic) as number;
      return groupIncidentCandidates(rows, latest, context.config.incidentBucketMs, minGroupSize);
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsDatabase) this.context.db.close();
  }
}
