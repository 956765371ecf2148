import type { ClaimedTask } from '../../src/queue/types.ts';
import type { Incarnation } from '../actors/incarnation.ts';
import type { SeededRandom } from '../random.ts';
import { BusyWindows } from './busy.ts';
import { deliverAgain } from './duplicate-delivery.ts';
import { POINT_FAULTS, TIMED_FAULTS } from './index.ts';
import type { FaultRun, FaultWorld, PointHit, PointInjector, SchedulerHandle, TimedInjector } from './injector.ts';
import { NO_RATES, type FaultPlan, type FaultRates, type KillPoint, type PointFault, type TimedFault } from './plan.ts';
import { PointCounter, boundaryPoint, pointAfterQueueCall } from './point-scope.ts';
import { recoverScheduler } from './restart.ts';
import { StaleWriter, staleWriteHooks } from './stale-write.ts';

/**
 * One run's faults: turns the plan into events on the loop and answers the world's hooks (a worker at
 * an await point, a queue call returned, a tool call, a supervisor's look at an uncertain task), each
 * by the file of the fault kind concerned. Every random draw comes from a stream forked by name from
 * the run's root (faults, delivery, stale-writes), so a seed decides every fault. `stop()` ends the
 * safety phase: no fault fires after it (S5).
 */
export class FaultController {
  private active = true;
  private startMs = 0;
  private readonly run: FaultRun;
  private readonly points: PointCounter<PointFault>;

  constructor(
    private readonly plan: FaultPlan,
    world: FaultWorld,
    /** The run's root stream: the controller forks its own from it. */
    root: SeededRandom,
  ) {
    const random = root.fork('faults');
    const busy = new BusyWindows(world.loop, world.history, random, world.scheduler.databaseFile);
    // A scheduler reopening after a restart finds the write lock free: the competing writer (busy.ts) lets go first.
    const scheduler: SchedulerHandle = Object.assign(Object.create(world.scheduler) as SchedulerHandle, {
      reopen: () => {
        busy.release();
        world.scheduler.reopen();
      },
    });
    this.run = {
      world: { ...world, scheduler },
      random,
      deliveryRandom: root.fork('delivery'),
      busy,
      staleWrites: new StaleWriter(world.loop, world.history, scheduler.connect('stale-writer'), () => !scheduler.down, root.fork('stale-writes'), scheduler.leaseMs),
    };
    this.points = new PointCounter(plan.points, () => world.runningTasks());
  }

  schedule(startMs: number): void {
    this.startMs = startMs;
    for (const fault of this.plan.timed) {
      this.run.world.loop.schedule(startMs + fault.atMs, () => {
        if (!this.active) return;
        return this.fire(fault);
      });
    }
  }

  private fire(fault: TimedFault): void | Promise<void> {
    return (TIMED_FAULTS[fault.kind] as TimedInjector<TimedFault>).fire(fault, this.run);
  }

  /** The liveness phase begins: nothing fires any more, and a scheduler a restart left down comes back. */
  stop(): void {
    this.active = false;
    this.run.busy.close();
    this.run.world.scheduler.storage?.stop();
    recoverScheduler(this.run);
  }

  /** The run is over (or crashed in the safety phase): the competing writer of a busy fault lets go and closes its connection. */
  end(): void {
    this.run.busy.close();
    this.run.world.scheduler.storage?.stop();
  }

  /** The plan's rates in the safety phase, none after it. */
  rates(): FaultRates {
    return this.active ? this.plan.rates : NO_RATES;
  }

  /**
   * `incarnation` reached `point` (in a run of `tenant`, for a model or tool call): true when it dies
   * right there (the call at the point never starts), `{ fails }` when that call fails at once
   * (faults/error-at.ts), false when it goes on. A dead process reaches nothing.
   */
  atPoint(point: KillPoint, incarnation: Incarnation, atNextAwait: boolean, taskId?: number, tenant?: string): PointHit {
    if (incarnation.state === 'dead') return true;
    if (!this.active) return false;
    const fault = this.points.arrive(point, incarnation.worker, this.run.world.loop.now() - this.startMs, tenant);
    if (fault === undefined) return false;
    return (POINT_FAULTS[fault.kind] as PointInjector<PointFault>).fire(fault, point, incarnation, atNextAwait, this.run, taskId);
  }

  /**
   * `incarnation`'s connection is at the BEGIN of a transaction for queue call `op` (sim/store/fleet.ts):
   * true when it dies right there, between the commits before and the one it was about to make. That
   * transaction never runs; the process dies before the loop's next event (atNextAwait), so another
   * chain of the same process already past its await (the lease keeper's, a second slot's) finishes its
   * burst, as under SIGKILL between two statements, and never reaches the queue as a dead process.
   */
  atBoundary(incarnation: Incarnation, op: string, taskId?: number): boolean {
    const point = boundaryPoint(op);
    return point !== undefined && this.atPoint(point, incarnation, true, taskId) === true;
  }

  /** A queue call of `incarnation` returned: the points it stands at now, and the faults a claim draws. */
  afterQueueCall(incarnation: Incarnation, op: string, args: readonly unknown[], result: unknown): void {
    const point = pointAfterQueueCall(op, args, result);
    if (point !== undefined) this.atPoint(point, incarnation, true, typeof args[0] === 'number' ? args[0] : undefined);
    if (op !== 'claim' || (result as { ok?: boolean } | undefined)?.ok !== true) return;
    const task = (result as { task: ClaimedTask }).task;
    staleWriteHooks.claimed(this.run, this.rates(), task, incarnation.id);
    deliverAgain(this.run, this.rates(), task);
  }

  /** The supervisor looks at an uncertain task, or has confirmed a stop: stale writes replay confirmations late. */
  supervisorSaw(event: 'uncertain' | 'confirmed', taskId: number, generation: number): unknown {
    return staleWriteHooks[event](this.run, this.rates(), taskId, generation);
  }
}
