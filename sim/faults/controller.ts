import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import { NO_RATES, type FaultPlan, type FaultRates, type KillPoint, type PointFault } from './plan.ts';

export interface FaultTargets {
  kill(worker: number, reason: string, reviveAfterMs: number, atNextAwait: boolean): void;
  killIncarnation(incarnationId: string, reason: string, reviveAfterMs: number, atNextAwait: boolean): void;
  pause(worker: number, durationMs: number): void;
  restart(downMs: number): void;
  jumpClock(deltaMs: number): void;
  /** Running tasks per worker index (0 for a worker with no live incarnation), for 'busiest' scopes. */
  runningTasks(): readonly number[];
}

/**
 * Turns a fault plan into events on the loop and answers the injection hooks. Every random draw
 * comes from the faults stream, so a seed decides every fault. `stop()` ends the safety phase: no
 * fault fires after it (S5).
 */
export class FaultController {
  private active = true;
  private startMs = 0;
  /** Arrivals each point fault has counted so far, by its index in the plan. */
  private readonly pointCounts: number[] = [];
  private readonly busyWindows: { fromMs: number; toMs: number; probability: number }[] = [];

  constructor(
    private readonly plan: FaultPlan,
    private readonly loop: EventLoop,
    private readonly history: History,
    private readonly random: SeededRandom,
    private readonly targets: FaultTargets,
  ) {}

  schedule(startMs: number): void {
    this.startMs = startMs;
    for (const fault of this.plan.timed) {
      this.loop.schedule(startMs + fault.atMs, () => {
        if (!this.active) return;
        switch (fault.kind) {
          case 'kill':
            return this.targets.kill(fault.worker, 'timed', fault.reviveAfterMs, false);
          case 'pause':
            return this.targets.pause(fault.worker, fault.durationMs);
          case 'restart':
            return this.targets.restart(fault.downMs);
          case 'clock-jump':
            return this.targets.jumpClock(fault.deltaMs);
          case 'busy':
            this.history.note('sqlite-busy', 'faults', { durationMs: fault.durationMs, probability: fault.probability });
            this.busyWindows.push({ fromMs: this.loop.now(), toMs: this.loop.now() + fault.durationMs, probability: fault.probability });
        }
      });
    }
  }

  stop(): void {
    this.active = false;
  }

  get isActive(): boolean {
    return this.active;
  }

  rates(): FaultRates {
    return this.active ? this.plan.rates : NO_RATES;
  }

  chance(probability: number): boolean {
    return probability > 0 && this.random.chance(probability);
  }

  /** A write meets SQLITE_BUSY inside an active busy window, with that window's probability. */
  busy(): boolean {
    if (!this.active) return false;
    const now = this.loop.now();
    const window = this.busyWindows.find((w) => w.fromMs <= now && now < w.toMs);
    return window !== undefined && this.random.chance(window.probability);
  }

  /**
   * Counts an arrival of `worker` at a point for every point fault whose scope takes it; returns the
   * first fault whose count reached its occurrence now, if any. An unscoped fault counts every arrival
   * from the start, as the plain kill-at always has.
   */
  pointFault(point: KillPoint, worker: number): PointFault | undefined {
    if (!this.active) return undefined;
    const sinceStartMs = this.loop.now() - this.startMs;
    let busiest: boolean | undefined;
    let fired: PointFault | undefined;
    this.plan.points.forEach((fault, index) => {
      if (fault.point !== point) return;
      if (fault.fromMs !== undefined && sinceStartMs < fault.fromMs) return;
      if (fault.toMs !== undefined && sinceStartMs >= fault.toMs) return;
      if (fault.target === 'busiest' && !(busiest ??= this.isBusiest(worker))) return;
      const count = (this.pointCounts[index] ?? 0) + 1;
      this.pointCounts[index] = count;
      if (fired === undefined && count === fault.occurrence) fired = fault;
    });
    return fired;
  }

  /** Seed 002: the worker holding the most running tasks right now (ties all count); never an idle one. */
  private isBusiest(worker: number): boolean {
    const running = this.targets.runningTasks();
    const mine = running[worker] ?? 0;
    return mine > 0 && running.every((other) => other <= mine);
  }
}
