import { CryptoRandom } from './adapters/random.ts';
import type { Clock, Random } from './ports.ts';
import { defaultAdmission, type AdmissionPolicy } from './queue/admission.ts';
import { admissionDecisions, budgetLevels, pauseTenant, pausedTenants, reserve, resumeTenant } from './queue/admission-api.ts';
import { claim, expireLeases } from './queue/claim.ts';
import { resolveConfig } from './queue/config.ts';
import { now, read, requireTaskId, type QueueContext } from './queue/context.ts';
import { enqueue } from './queue/enqueue.ts';
import { ClosedError, ConfigError, InputError } from './queue/errors.ts';
import { acknowledgeCancel, appendEvent, complete, fail, heartbeat } from './queue/holder-writes.ts';
import { groupIncidentCandidates } from './queue/incidents.ts';
import { cancel, confirmStopped, redrive } from './queue/operator.ts';
import { signals } from './queue/signals.ts';
import { STATES } from './queue/states.ts';
import type { DeadLetter, HoldView, IncidentCandidate, QueueConfig, Snapshot, TaskState, Tier, Usage, WorkQueue } from './queue/types.ts';
import { toTaskEvent, toTaskView } from './queue/views.ts';
import { lastCheckpoint, writeCheckpoint } from './runs/checkpoints.ts';
import { effectResult, listEffects, recordEffect } from './runs/effects.ts';
import { interrupt } from './runs/interrupt.ts';
import { reconcile } from './runs/reconciler.ts';
import { requireDurability, type Durability } from './store/durability.ts';
import { isPglite, isPostgresUrl, PgStore, type PgliteLike, type PgPoolLike as Pool } from './store/pg-store.ts';
import type { SqliteDatabase as Database } from './store/sqlite-handle.ts';
import { SqliteStore } from './store/sqlite-store.ts';
import type { Step, Store, StoreTx } from './store/store.ts';

export interface OpenWorkQueueOptions {
  /**
   * A file path, ':memory:', a better-sqlite3 handle (which the caller keeps and closes), a
   * `postgres://` or `postgresql://` URL, a pg Pool (which the caller keeps and ends), a PGlite
   * database (@electric-sql/pglite, which the caller keeps and closes: the PostgreSQL store in-process),
   * or a Store.
   */
  db: string | Database | Pool | PgliteLike | Store;
  /** PostgreSQL only: the schema the queue's tables live in (created if missing); the connection's default otherwise. */
  schema?: string;
  /**
   * PostgreSQL only (default true): whether a notice that new work is claimable carries the task, when
   * it is the only task live, so that an idle worker claims it in one round trip (docs/postgresql.md).
   * Any role that may connect to the database can LISTEN and read that notice, input included: give
   * false where such a role must not see task inputs (every queue on the schema should say the same).
   */
  handoff?: boolean;
  clock: Clock;
  /** Defaults to the OS CSPRNG; the simulator passes a seeded stream. */
  random?: Random;
  config?: Partial<QueueConfig>;
  /**
   * What a commit survives on power loss (src/store/durability.ts). A path defaults to 'acknowledged':
   * no acknowledged enqueue, effect-ledger row, run end or cancel is lost. A handle keeps its own
   * synchronous setting unless this is given. A Store brings its own: passing both is a ConfigError.
   */
  durability?: Durability;
  /** A2: the admission policy; seed 004's admit() (queue/admission.ts) unless replaced. Must be pure. */
  admission?: AdmissionPolicy;
}

/**
 * Opens a durable work queue. The schema is migrated idempotently, statements are prepared once, and
 * every decision reads time from `clock` and randomness from `random`, never from the system. Every
 * method returns a promise (SPEC P2): each transaction of the core is an await point.
 */
export function openWorkQueue(options: OpenWorkQueueOptions): WorkQueue {
  if (options === null || typeof options !== 'object') throw new ConfigError('options', 'expected { db, clock, random?, config? }');
  const config = resolveConfig(options.config ?? {});
  if (options.clock === null || typeof options.clock?.now !== 'function') throw new ConfigError('clock', 'expected a Clock with now()');
  if (options.random !== undefined && typeof options.random?.next !== 'function') {
    throw new ConfigError('random', 'expected a Random with next()');
  }
  const durability = requireDurability(options.durability);
  if (options.admission !== undefined && typeof options.admission !== 'function') throw new ConfigError('admission', 'expected a function (request) => { action, reason }');
  const partial = { config, clock: options.clock, random: options.random ?? new CryptoRandom(), admission: options.admission ?? defaultAdmission };
  if (isStore(options.db) && durability !== undefined) {
    throw new ConfigError('durability', 'a Store passed in keeps the durability it was opened with; give it to SqliteStore.open instead');
  }
  const postgres = !isStore(options.db) && (isPostgresUrl(options.db) || isPgPool(options.db) || isPglite(options.db));
  if (postgres && durability !== undefined) {
    throw new ConfigError('durability', 'PostgreSQL decides what a commit survives by its own settings (synchronous_commit, fsync); leave durability out');
  }
  if (!postgres && options.schema !== undefined) throw new ConfigError('schema', 'a schema is for a PostgreSQL database only');
  if (options.handoff !== undefined && typeof options.handoff !== 'boolean') throw new ConfigError('handoff', `handoff must be true or false, got ${JSON.stringify(options.handoff) ?? typeof options.handoff}`);
  if (!postgres && options.handoff !== undefined) throw new ConfigError('handoff', 'a handoff is a PostgreSQL notice; leave it out for SQLite or a Store passed in');
  const store = isStore(options.db)
    ? options.db
    : postgres
      ? PgStore.open(
          options.db as string | Pool | PgliteLike,
          { busyRetries: config.busyRetries, ...(options.schema === undefined ? {} : { schema: options.schema }), ...(options.handoff === undefined ? {} : { handoff: options.handoff }) },
          () => now(partial as QueueContext),
        )
      : SqliteStore.open(
        options.db as string | Database,
        { busyTimeoutMs: config.busyTimeoutMs, busyRetries: config.busyRetries, ...(durability === undefined ? {} : { durability }) },
        () => now(partial as QueueContext),
      );
  return new StoreWorkQueue({ ...partial, store });
}

/** A pg Pool (or anything pool-shaped that is not a Store): connect() and query(). */
function isPgPool(db: unknown): db is Pool {
  return typeof db === 'object' && db !== null && typeof (db as Pool).connect === 'function' && typeof (db as Pool).query === 'function' && !isStore(db);
}

function isStore(db: unknown): db is Store {
  return typeof db === 'object' && db !== null && typeof (db as Store).write === 'function' && typeof (db as Store).read === 'function' && typeof (db as Store).kind === 'string';
}

/** The public API over any store: argument checks here, decisions in queue/ and runs/, SQL in the store. */
class StoreWorkQueue implements WorkQueue {
  private closed = false;
  private readonly unwatchers = new Set<() => void>();

  constructor(private readonly context: QueueContext) {}

  get config(): Readonly<QueueConfig> {
    return this.context.config;
  }

  /** The context, or ClosedError (which `call` turns into a rejection). */
  private open(): QueueContext {
    if (this.closed) throw new ClosedError();
    return this.context;
  }

  /**
   * Every method answers through a promise, and only through it: a bad argument or a closed queue is a
   * rejection, never a synchronous throw. No extra async layer: the store's own settled promise is the
   * answer, so a caller's await costs one turn of the microtask queue.
   */
  private call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return work();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  enqueue: WorkQueue['enqueue'] = (request) => this.call(() => enqueue(this.open(), request));
  claim: WorkQueue['claim'] = (workerId) => this.call(() => claim(this.open(), workerId));
  heartbeat: WorkQueue['heartbeat'] = (taskId, workerId, generation) => this.call(() => heartbeat(this.open(), taskId, workerId, generation));
  complete: WorkQueue['complete'] = (taskId, workerId, generation, result) => this.call(() => complete(this.open(), taskId, workerId, generation, result));
  fail: WorkQueue['fail'] = (taskId, workerId, generation, failure) => this.call(() => fail(this.open(), taskId, workerId, generation, failure));
  appendEvent: WorkQueue['appendEvent'] = (taskId, workerId, generation, type, data) => this.call(() => appendEvent(this.open(), taskId, workerId, generation, type, data));
  acknowledgeCancel: WorkQueue['acknowledgeCancel'] = (taskId, workerId, generation) => this.call(() => acknowledgeCancel(this.open(), taskId, workerId, generation));
  checkpoint: WorkQueue['checkpoint'] = (taskId, workerId, generation, checkpoint) => this.call(() => writeCheckpoint(this.open(), taskId, workerId, generation, checkpoint));
  lastCheckpoint: WorkQueue['lastCheckpoint'] = (taskId) => this.call(() => lastCheckpoint(this.open(), taskId));
  effectResult: WorkQueue['effectResult'] = (requestKey) => this.call(() => effectResult(this.open(), requestKey));
  recordEffect: WorkQueue['recordEffect'] = (taskId, workerId, generation, effect) => this.call(() => recordEffect(this.open(), taskId, workerId, generation, effect));
  reconcile: WorkQueue['reconcile'] = () => this.call(() => reconcile(this.open()));
  interrupt: WorkQueue['interrupt'] = (taskId, workerId, generation, reason) => this.call(() => interrupt(this.open(), taskId, workerId, generation, reason));
  effects: WorkQueue['effects'] = () => this.call(() => listEffects(this.open()));
  confirmStopped: WorkQueue['confirmStopped'] = (taskId, generation, source) => this.call(() => confirmStopped(this.open(), taskId, generation, source));
  cancel: WorkQueue['cancel'] = (taskId) => this.call(() => cancel(this.open(), taskId));
  redrive: WorkQueue['redrive'] = (taskId) => this.call(() => redrive(this.open(), taskId));
  expireLeases: WorkQueue['expireLeases'] = () => this.call(() => expireLeases(this.open()));
  pauseTenant: WorkQueue['pauseTenant'] = (tenant, reason) => this.call(() => pauseTenant(this.open(), tenant, reason));
  resumeTenant: WorkQueue['resumeTenant'] = (tenant) => this.call(() => resumeTenant(this.open(), tenant));
  pausedTenants: WorkQueue['pausedTenants'] = () => this.call(() => pausedTenants(this.open()));
  reserve: WorkQueue['reserve'] = (taskId, workerId, generation, needs) => this.call(() => reserve(this.open(), taskId, workerId, generation, needs));
  budgetLevels: WorkQueue['budgetLevels'] = () => this.call(() => budgetLevels(this.open()));
  admissionDecisions: WorkQueue['admissionDecisions'] = () => this.call(() => admissionDecisions(this.open()));
  signals: WorkQueue['signals'] = () => this.call(() => signals(this.open()));
  tenantServices: WorkQueue['tenantServices'] = () => this.call(() => read(this.open(), 'tenantServices', (tx) => tx.serviceList()));
  reservations: WorkQueue['reservations'] = () =>
    this.call(() =>
      read(this.open(), 'reservations', (tx) => tx.reservationList()).then((rows) =>
        rows.map((row) => ({
          taskId: row.task_id,
          generation: row.generation,
          budget: row.budget,
          scope: row.scope,
          reserved: row.reserved,
          consumed: row.consumed,
          released: row.released,
          reservedAt: row.reserved_at,
          releasedAt: row.released_at,
        })),
      ),
    );

  async holds(): Promise<HoldView[]> {
    const rows = await read(this.open(), 'holds', (tx) => tx.holdList());
    return rows.map((row) => ({
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
    }));
  }

  async deadLetters(): Promise<DeadLetter[]> {
    const rows = await read(this.open(), 'deadLetters', (tx) => tx.deadLetterList());
    return rows.map((row) => ({
      taskId: row.task_id,
      tenant: row.tenant,
      topic: row.topic,
      version: row.version,
      reason: row.reason,
      reasons: JSON.parse(row.reasons) as string[],
      at: row.at,
    }));
  }

  creditLedger: WorkQueue['creditLedger'] = () =>
    this.call(() =>
      read(this.open(), 'creditLedger', (tx) => tx.creditList()).then((rows) =>
        rows.map((row) => ({ taskId: row.task_id, tenant: row.tenant, kind: row.kind, credits: row.credits, at: row.at })),
      ),
    );

  schemaMigrations: WorkQueue['schemaMigrations'] = () =>
    this.call(() =>
      read(this.open(), 'schemaMigrations', (tx) => tx.migrationList()).then((rows) =>
        rows.map((row) => ({ version: row.version, name: row.name, appliedAt: row.applied_at })),
      ),
    );

  get: WorkQueue['get'] = async (taskId) => {
    const context = this.open();
    const id = requireTaskId(taskId);
    const row = await read(context, 'get', (tx) => tx.taskById(id));
    return row === undefined ? undefined : toTaskView(row);
  };

  events: WorkQueue['events'] = async (taskId) => {
    const context = this.open();
    const id = requireTaskId(taskId);
    return (await read(context, 'events', (tx) => tx.eventListForTask(id))).map(toTaskEvent);
  };

  eventCursor: WorkQueue['eventCursor'] = () => this.call(() => read(this.open(), 'eventCursor', (tx) => tx.eventCursor()));

  eventsSince: WorkQueue['eventsSince'] = async (cursor, limit = 1_000) => {
    const context = this.open();
    if (!Number.isSafeInteger(cursor) || cursor < 0) throw new InputError('cursor', 'expected a non-negative integer');
    if (!Number.isSafeInteger(limit) || limit < 1) throw new InputError('limit', 'expected a positive integer');
    return (await read(context, 'eventsSince', (tx) => tx.eventListSince(cursor, limit))).map(toTaskEvent);
  };

  allEvents: WorkQueue['allEvents'] = () => this.call(() => read(this.open(), 'allEvents', (tx) => tx.eventList()).then((rows) => rows.map(toTaskEvent)));

  /** Q19: only this tenant's rows, selected by the tenant key in SQL, never filtered afterwards. */
  listForTenant: WorkQueue['listForTenant'] = async (tenant) => {
    const context = this.open();
    if (typeof tenant !== 'string' || tenant === '') throw new InputError('tenant', 'expected a non-empty string');
    return (await read(context, 'listForTenant', (tx) => tx.taskListForTenant(tenant))).map(toTaskView);
  };

  liveCount: WorkQueue['liveCount'] = () => this.call(() => read(this.open(), 'liveCount', (tx) => tx.counterLive()));

  tasksInState: WorkQueue['tasksInState'] = async (state: TaskState) => {
    const context = this.open();
    if (!STATES.includes(state)) throw new InputError('state', `expected one of ${STATES.join(', ')}`);
    return (await read(context, 'tasksInState', (tx) => tx.taskListInState(state))).map(toTaskView);
  };

  rejections: WorkQueue['rejections'] = () => this.call(() => read(this.open(), 'rejections', (tx) => tx.rejectionList()));

  /** Q19: the admin view across tenants. Never hand it to a tenant. */
  snapshot: WorkQueue['snapshot'] = async () => {
    const context = this.open();
    const at = now(context);
    return read(context, 'snapshot', (tx) => snapshotIn(tx, at));
  };

  incidentCandidates: WorkQueue['incidentCandidates'] = async (range) => {
    const context = this.open();
    const { from, to, minGroupSize = 2 } = range ?? ({} as never);
    if (!Number.isFinite(from)) throw new InputError('from', 'expected a time in ms');
    if (!Number.isFinite(to) || to < from) throw new InputError('to', 'expected a time in ms not before from');
    if (!Number.isSafeInteger(minGroupSize) || minGroupSize < 1) throw new InputError('minGroupSize', 'expected a positive integer');
    return read(context, 'incidentCandidates', (tx) => incidentCandidatesIn(tx, from, to, minGroupSize, context.config.incidentBucketMs));
  };

  /** W1: see WorkQueue.watch; a store that cannot be heard is polled only. */
  watch(listener: () => void): () => void {
    if (typeof listener !== 'function') throw new InputError('listener', 'expected a function');
    if (this.closed) return () => {};
    const unwatch = this.context.store.watch?.(listener) ?? (() => {});
    this.unwatchers.add(unwatch);
    return () => {
      this.unwatchers.delete(unwatch);
      unwatch();
    };
  }

  changeCounter: WorkQueue['changeCounter'] = () => this.call(() => (this.open().store.changeCounter?.() ?? Promise.resolve(undefined)));

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A watcher left behind would keep the process alive (a LISTEN connection) or hear a closed queue.
    for (const unwatch of this.unwatchers) unwatch();
    this.unwatchers.clear();
    await this.context.store.close();
  }
}

function* incidentCandidatesIn(tx: StoreTx, from: number, to: number, minGroupSize: number, bucketMs: number): Step<IncidentCandidate[]> {
    const rows = yield* tx.taskListEnqueuedBetween(from, to);
    const latest = new Map<string, number | null>();
    for (const row of rows) {
      const key = JSON.stringify([row.tenant, row.topic]);
      if (!latest.has(key)) latest.set(key, yield* tx.taskLatestVersion(row.tenant, row.topic));
    }
    return groupIncidentCandidates(rows, (tenant, topic) => latest.get(JSON.stringify([tenant, topic])) as number, bucketMs, minGroupSize);
  }

function* snapshotIn(tx: StoreTx, at: number): Step<Snapshot> {
    const tasks = (yield* tx.taskList()).map(toTaskView);
    const countsByState = { ready: 0, running: 0, uncertain: 0, done: 0, failed: 0, superseded: 0, cancelled: 0, expired: 0 };
    for (const { state, n } of yield* tx.taskCountsByState()) countsByState[state] = n;
    // fromEntries defines own properties, so a tenant called "__proto__" is kept as a key.
    const byTenant: Record<string, number> = Object.fromEntries((yield* tx.taskOccupiedByTenant()).map(({ tenant, n }) => [tenant, n]));
    const snapshot: Snapshot = {
      at,
      tasks,
      countsByState,
      live: yield* tx.counterLive(),
      occupied: { global: countsByState.running + countsByState.uncertain, byTenant },
      rejections: yield* tx.rejectionList(),
    };
    return snapshot;
  }
