/**
 * What a commit survives. A process crash never loses a commit (the WAL is written before COMMIT
 * returns); a power loss (or an OS crash) loses every commit the disk was not told to keep. In WAL mode
 * SQLite syncs the WAL at each commit under synchronous FULL (or EXTRA), but under NORMAL only when it
 * checkpoints, so a NORMAL commit that was acknowledged can roll back after a power loss (SQLite docs:
 * "PRAGMA synchronous", "Write-Ahead Logging"). A sync of the WAL file keeps every frame committed
 * before it, by any connection: what survives is always a prefix of the commit order.
 *
 * The choice (`openWorkQueue({ durability })`, `SqliteStore.open(..., { durability })`):
 *
 * - `acknowledged` (the default for a path): the connection runs NORMAL, and the transactions whose
 *   answer leaves the process as a promise (`SYNCED_WRITES`) are synced before that answer: at the
 *   commit under FULL, or, for an enqueue (`SYNCED_AFTER_COMMIT`), committed at NORMAL with the WAL
 *   synced right after, outside the write lock. No acknowledged enqueue, no effect-ledger row, no run
 *   end and no cancel is lost on power loss; claims, heartbeats, checkpoints and the like may roll back
 *   to the last synced state, which the queue re-derives.
 * - `every_commit`: synchronous FULL for every commit, synced at the commit under the write lock.
 *   Nothing committed is lost on power loss, not even for a moment.
 * - `process_crash`: synchronous NORMAL for every commit (Leasehold before this option): every commit
 *   survives a process crash; on power loss, everything since the last checkpoint may be lost,
 *   acknowledged enqueues and ledger rows included.
 *
 * The evidence for the default is sim/store/power-loss.test.ts (the queue over a power-loss twin that
 * cuts power at every commit boundary); its cost is the bench section `durability`.
 */
import { ConfigError } from '../queue/errors.ts';

export type Durability = 'acknowledged' | 'every_commit' | 'process_crash';

export const DURABILITIES: readonly Durability[] = Object.freeze(['acknowledged', 'every_commit', 'process_crash']);

/** The durability of a queue opened on a path. A handle passed in keeps its own settings unless given one. */
export const DEFAULT_DURABILITY: Durability = 'acknowledged';

/**
 * The writes synced before their answer is given under `acknowledged`: their result is not something
 * the queue can derive again from the last synced state and the clock, because the outside world
 * decided it or acts on it.
 *
 * - `enqueue`: the client is told its task is accepted (Q1); losing it loses a task (I11).
 * - `recordEffect`: the ledger row says an external effect was executed (R3); losing it lets a
 *   takeover act again, leaving the external system's key as the only guard (I8).
 * - `cancel`: the client is told its task is cancelled (Q13); losing it would run a cancelled task.
 * - `complete`, `fail`, `acknowledgeCancel`, `interrupt`: a worker's last write of a run, after which it
 *   hands the outcome on and forgets the run; complete and the ends of a run close its hold in the
 *   same commit (R4), the settlement that is billed once.
 * - `pauseTenant`, `resumeTenant`: an operator is told the tenant is paused (A2); losing the pause would
 *   lease the paused tenant's work again.
 * - `redrive`: an operator is told a dead letter is back in the queue (O1); losing it would leave the
 *   work dead while the operator believes it runs.
 *
 * Everything in `LOSABLE_WRITES` may roll back to the last synced state; an operation in neither set
 * is synced (a new kind of write is durable until someone argues otherwise).
 */
export const SYNCED_WRITES: ReadonlySet<string> = new Set([
  'enqueue',
  'recordEffect',
  'cancel',
  'complete',
  'fail',
  'acknowledgeCancel',
  'interrupt',
  'pauseTenant',
  'resumeTenant',
  'redrive',
]);

/**
 * The synced writes that commit at NORMAL under `acknowledged` and have the WAL synced after the commit,
 * before their answer (SqliteStore.syncWal), instead of at the commit under FULL. The commit is visible
 * to other connections the moment it is made, so the workers it wakes claim the new task while its sync
 * runs, and the claim does not wait for the write lock the sync would have held, as with the PostgreSQL
 * store's asynchronous commit and flush. A power cut in that moment (about the time of one sync) takes
 * the enqueue back with any claim of it, and its caller was never told it succeeded.
 *
 * Only the enqueue. Measured with four worker processes on one file, the pickup of a task enqueued by
 * another process went from 5.3 to 2.5 ms (p50; bench fleet). The same for a run's end cut a 2,000-task
 * backlog's throughput from about 800 to 600 tasks/s (five paired runs), so the other synced writes keep
 * FULL. Not measured, a likely cause: the next writer appends WAL frames to a file another process is
 * syncing, and may wait for pages under write-back while it holds the write lock.
 */
export const SYNCED_AFTER_COMMIT: ReadonlySet<string> = new Set(['enqueue']);

/**
 * The writes that stay at NORMAL under `acknowledged`, and why losing one to a power loss is safe (a
 * power loss stops every process on the host, so no worker outlives it):
 *
 * - `claim`, `heartbeat`: a rolled-back claim is a run that had not started; whatever it did outside
 *   went through `recordEffect`, which synced the claim with it. The lease is taken again.
 * - `checkpoint`, `appendEvent`: a rolled-back checkpoint repeats a model call on takeover; usage is
 *   charged only through checkpoints (R4), so the charge falls, it never doubles.
 * - `expireLeases`, `reconcile`: decided again from the clock after reopening.
 * - `reserve`: a rolled-back reservation goes with the model call it was for, whose checkpoint (the only
 *   way usage is charged) rolls back too; the takeover reserves again.
 * - `confirmStopped`: the task is uncertain again; every worker on the host has stopped, so the
 *   supervisor's next confirmation gives the same answer.
 */
export const LOSABLE_WRITES: ReadonlySet<string> = new Set([
  'claim',
  'heartbeat',
  'checkpoint',
  'appendEvent',
  'expireLeases',
  'reconcile',
  'confirmStopped',
  'reserve',
]);

/** The durability given, checked; undefined stays undefined (the caller picks the default). */
export function requireDurability(value: unknown): Durability | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(DURABILITIES as readonly string[]).includes(value)) {
    throw new ConfigError('durability', `expected one of ${DURABILITIES.map((d) => `'${d}'`).join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as Durability;
}

/** The synchronous level a commit of `operation` runs at under `durability`. */
export function synchronousFor(durability: Durability, operation: string): 'FULL' | 'NORMAL' {
  if (durability === 'every_commit') return 'FULL';
  if (durability === 'process_crash') return 'NORMAL';
  return LOSABLE_WRITES.has(operation) || SYNCED_AFTER_COMMIT.has(operation) ? 'NORMAL' : 'FULL';
}

/** Whether a commit of `operation` under `durability` has the WAL synced after it, before its answer (SYNCED_AFTER_COMMIT). */
export function syncedAfterCommit(durability: Durability, operation: string): boolean {
  return durability === 'acknowledged' && SYNCED_AFTER_COMMIT.has(operation);
}
