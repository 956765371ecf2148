import type { ClaimedTask } from '../../src/queue/types.ts';
import type { ToolFailure } from '../../src/worker/types.ts';
import { part, probability } from '../schema-kit.ts';
import type { ActorQueue } from '../actors/gated-queue.ts';
import type { Incarnation } from '../actors/incarnation.ts';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import type { BusyWindows } from './busy.ts';
import type { FaultPlan } from './plan.ts';
import type { KillPoint } from './point-scope.ts';
import type { StaleWriter } from './stale-write.ts';
import type { StorageFaults } from '../store/storage-faults.ts';

/**
 * What every fault injector (one file per fault kind in sim/faults/) is written against. The world
 * (sim/world.ts) implements FaultWorld: the few handles on processes and the scheduler a fault needs.
 * The controller (controller.ts) holds one FaultRun per run and calls each kind's file at its moment:
 * a timed fault at its time, a point fault when a worker reaches its point, a rate at the event it
 * rates (a tool call, a claim, a confirmation).
 */
export interface FaultWorld {
  readonly loop: EventLoop;
  readonly history: History;
  readonly workerCount: number;
  /**
   * SIGKILL worker `index`'s current incarnation (no-op when it is already dead); a new incarnation
   * starts `reviveAfterMs` later. `atNextAwait`: the kill was decided inside a synchronous burst of the
   * worker, which finishes it and dies before the loop's next event.
   */
  kill(index: number, reason: string, reviveAfterMs: number, atNextAwait: boolean, label?: string): void;
  /**
   * R8: SIGTERM to worker `index`'s current incarnation (faults/drain.ts): the production Worker.drain(drainMs)
   * runs on its gated waiter and queue, then the incarnation exits and a new one starts `reviveAfterMs` later.
   * A paused incarnation drains when it resumes; a dead one is not drained.
   */
  drain(index: number, drainMs: number, reviveAfterMs: number, label?: string): void;
  /** Freezes worker `index`'s live incarnation for `durationMs`: it misses heartbeats and wakes as a possible zombie. `at`: the await point a point fault froze it at. */
  pause(index: number, durationMs: number, label?: string, at?: string): void;
  /** Whether `incarnation` is still its worker's current one: a delayed fault hits only the process that reached the point. */
  isCurrent(incarnation: Incarnation): boolean;
  /** Running tasks per worker index (0 for a worker with no live incarnation). */
  runningTasks(): readonly number[];
  /** Q14: the deadline a task was enqueued with (wall-clock ms), if it has one (faults/expire-at.ts). */
  deadlineOf(taskId: number): number | undefined;
  /** The operator cancels a task (Q13), as the client swarm's operator does: recorded, retried while the scheduler is down. */
  cancel(taskId: number): void;
  /** A2: the operator pauses (resumes) a tenant: recorded as its pauseTenant (resumeTenant) call, retried while the scheduler is down. */
  pauseTenant(tenant: string, reason: string): void;
  resumeTenant(tenant: string): void;
  /** Hands worker `index` a claim again (a duplicate delivery); ignored unless it is alive. */
  deliver(index: number, task: ClaimedTask): void;
  readonly scheduler: SchedulerHandle;
}

/** The scheduler process as faults see it: the restart fault shuts it down and reopens it. */
export interface SchedulerHandle {
  /** True while it is down: calls meet SQLITE_BUSY, clients retry. */
  readonly down: boolean;
  /** The database file, which a competing writer (busy.ts) opens a connection of its own on; undefined in memory. */
  readonly databaseFile?: string | undefined;
  /** Whether its database is a file, whose committed state a reopen finds again (an in-memory one is not restarted). */
  readonly onDisk: boolean;
  /**
   * Closes the queue and its database; `down` is true once it has closed. `processes`: the worker
   * processes go down with it, and start again, each opening its queue afresh, when it reopens.
   */
  shutDown(processes?: boolean): Promise<void>;
  /** Opens the queue again from the file, with only committed state (no-op unless down). */
  reopen(): void;
  /** A queue of its own, on a connection of its own (sim/store/fleet.ts), for an actor of the faults such as the stale writer. */
  connect(actor: string): ActorQueue;
  /**
   * Cuts the host's power (power-loss.ts): present only when the run's database is a power-loss twin.
   * The scheduler and every worker die, the database returns to its last synced state (plus a seeded
   * prefix of the unsynced commits with keep 'prefix'), and everything comes back downMs later.
   */
  readonly powerLoss?: (keep: 'none' | 'prefix', downMs: number) => void;
  /**
   * A1: the budget levels now (queue.budgetLevels, read on the scheduler's own connection), present only
   * when the queue declares budgets: a restart notes them before it shuts down and once it reopened.
   */
  readonly budgetLevels?: () => Promise<BudgetLevelNote[]>;
  /** The lease of the queue's configuration, which stale writes wait out. */
  readonly leaseMs: number;
  /**
   * The storage beneath the database (store/storage-faults.ts), which the disk-full and io-error faults
   * act on; absent, or attached to nothing (a world on the power-loss twin), they do nothing but note.
   */
  readonly storage?: StorageFaults;
}

/** One budget's level as a restart note records it (faults/restart.ts). */
export interface BudgetLevelNote {
  budget: string;
  scope: string;
  kind: string;
  level: number;
  limit: number;
  /** The stored row's refill clock (a rate bucket's updated_at). */
  updatedAt: number;
}

/** One run's faults: the world, the faults stream, and the state kinds keep between events. */
export interface FaultRun {
  readonly world: FaultWorld;
  /** The faults stream (S2): busy bursts and duplicate-delivery decisions. */
  readonly random: SeededRandom;
  /** The delivery stream: which worker a duplicate goes to, and when. */
  readonly deliveryRandom: SeededRandom;
  readonly busy: BusyWindows;
  readonly staleWrites: StaleWriter;
}

/** What a swarm seed draws a kind's faults with (swarm.ts): the faults stream and the plan's bounds. */
export interface SwarmDraw {
  readonly random: SeededRandom;
  /** A time in the safety phase, ms from the start. */
  at(): number;
  /** A worker index of the pool. */
  worker(): number;
}

/** A cross-field problem of a fault against its scenario, with a path inside the fault. */
export interface FaultProblem {
  path: (string | number)[];
  message: string;
}

/** A fault that acts at a time: an entry of `plan.timed`. */
/**
 * What a fault kind needs of the database beneath the world (sim/world/database-host.ts): `disk`, what
 * was committed survives the scheduler's restart; `file`, a real database file (a second connection on
 * it, or a disk that can lose power); `power-loss-twin`, the twin that models what a power cut keeps;
 * `storage-gate`, the gate every write statement passes, where a full disk or an I/O error strikes.
 */
export type DatabaseNeed = 'disk' | 'file' | 'power-loss-twin' | 'storage-gate';

export interface TimedInjector<Fault extends { kind: string; atMs: number }> {
  readonly kind: Fault['kind'];
  /** What a plan with a fault of this kind needs of the database (absent: nothing beyond the default, memory). */
  readonly needs?: readonly DatabaseNeed[];
  /** How a swarm seed adds faults of this kind to its plan; absent: not a swarm kind. */
  readonly swarm?: (draw: SwarmDraw, plan: FaultPlan) => void;
  /** Checks a fault against a pool of `workerCount` workers. */
  readonly problems?: (fault: Fault, workerCount: number) => FaultProblem[];
  /**
   * What it does when its time comes (the controller calls it only in the safety phase, S5). A promise
   * is handed to the event loop, which records its failure as the run's.
   */
  fire(fault: Fault, run: FaultRun): void | Promise<void>;
}

/** A fault that acts when a worker reaches an await point: an entry of `plan.points`. */
/** What a point fault does to the call at its point: nothing (false), the process dies there (true), or the call fails. */
export type PointHit = boolean | { fails: ToolFailure };

export interface PointInjector<Fault extends { kind: string }> {
  readonly kind: Fault['kind'];
  /** The await points this kind can be put at; absent: every one of KILL_POINTS. */
  readonly points?: readonly KillPoint[];
  readonly swarm?: (draw: SwarmDraw, plan: FaultPlan) => void;
  /**
   * Hits `incarnation`, which has just reached `point` and is the one this fault counted to. True:
   * the call at the point never starts (the process died right there); `{ fails }`: the call at the
   * point fails at once with that error (faults/error-at.ts).
   */
  fire(fault: Fault, point: KillPoint, incarnation: Incarnation, atNextAwait: boolean, run: FaultRun, taskId?: number): PointHit;
}

/** A fault that acts with a probability per event: a field of `plan.rates`. */
export interface RateInjector<Field extends string> {
  readonly kind: string;
  readonly field: Field;
  /** The rate a swarm seed that turns this kind on gives it. */
  readonly swarm: (random: SeededRandom) => number;
}

/** A rate as a scenario file states it: `{ "kind": "tool-error", "probability": 0.25 }`. */
export function ratePart<const Kind extends string>(kind: Kind, description: string) {
  return part(kind, { probability: probability().meta({ description: 'The chance per event, from 0 to 1.' }) }, description);
}
