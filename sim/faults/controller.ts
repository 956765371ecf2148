import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import { NO_RATES, type FaultPlan, type FaultRates, type KillPoint } from './plan.ts';

export interface FaultTargets {
  kill(worker: number, reason: string, reviveAfterMs: number, atNextAwait: boolean): void;
  killIncarnation(incarnationId: string, reason: string, reviveAfterMs: number, atNextAwait: boolean): void;
  pause(worker: number, durationMs: number): void;
  restart(downMs: number): void;
  jumpClock(deltaMs: number): void;
}

/**
 * Turns a fault plan into events on the loop and answers the injection hooks. Every random draw
 * comes from the faults stream, so a seed decides every fault. `stop()` ends the safety phase: no
 * fault fires after it (S5).
 */
export class FaultController {
  private active = true;
  private readonly pointCounts = new Map<KillPoint, number>();
  private readonly busyWindows: { fromMs: number; toMs: number; probability: number }[] = [];

  constructor(
    private readonly plan: FaultPlan,
    private readonly loop: EventLoop,
    private readonly history: History,
    private readonly random: SeededRandom,
    private readonly targets: FaultTargets,
  ) {}

  schedule(startMs: number): void {
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

  /** Counts arrivals at a kill point; true if the plan kills the process arriving now. */
  killsAt(point: KillPoint): { reviveAfterMs: number } | undefined {
    if (!this.active) return undefined;
    const count = (this.pointCounts.get(point) ?? 0) + 1;
    this.pointCounts.set(point, count);
    const fault = this.plan.points.find((p) => p.point === point && p.occurrence === count);
    return fault === undefined ? undefined : { reviveAfterMs: fault.reviveAfterMs };
  }
}
