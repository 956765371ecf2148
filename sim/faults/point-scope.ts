import { nonNegative, oneOf, positive } from '../schema-kit.ts';
import { z } from 'zod';

/**
 * What the two point faults (kill-at.ts, pause-at.ts) share: the await points a worker can be hit at,
 * the scope that says which arrivals at a point count, and the counting itself.
 */

/**
 * Every transaction boundary of the worker runtime: the BEGIN of each queue call it makes, where its
 * connection may wait for the rest of the fleet (sim/store/fleet.ts). A kill here lands between two
 * commits of the run (the call's transaction never starts); a pause freezes the process right after it.
 */
export const BOUNDARY_POINTS = [
  'before_claim',
  'before_heartbeat',
  'before_get',
  'before_lastCheckpoint',
  'before_checkpoint',
  'before_effectResult',
  'before_recordEffect',
  'before_appendEvent',
  'before_acknowledgeCancel',
  'before_interrupt',
  'before_complete',
  'before_fail',
] as const;

/**
 * Where a worker can die: before a call, after an external effect but before its response is recorded,
 * between the two checkpoints of a step, after the terminal write, or at any transaction boundary.
 * Together they are every await of the worker runtime but its idle sleep: the model call, each tool
 * call, each queue call. Appended in that order, so a swarm seed drawn before the boundaries existed
 * picks the same named point from the same draw.
 */
export const KILL_POINTS = ['before_model_call', 'before_tool_call', 'after_effect', 'between_checkpoints', 'after_terminal_write', ...BOUNDARY_POINTS] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

/** The points whose call can fail at once (error-at): the model call and each tool call a run starts. */
export const ERROR_POINTS = ['before_model_call', 'before_tool_call'] as const satisfies readonly KillPoint[];

/** The points whose arrival names no task (a cancel-at passes there): the model call, a tool call, after an effect, a claim. */
export const TASKLESS_POINTS: ReadonlySet<KillPoint> = new Set<KillPoint>(['before_model_call', 'before_tool_call', 'after_effect', 'before_claim']);

const BOUNDARY_OF: ReadonlyMap<string, KillPoint> = new Map(BOUNDARY_POINTS.map((point) => [point.slice('before_'.length), point]));

/** The boundary point at the BEGIN of queue call `op`'s transaction, if the worker runtime makes that call. */
export function boundaryPoint(op: string): KillPoint | undefined {
  return BOUNDARY_OF.get(op);
}

/**
 * A point fault fires when a worker reaches an await point. Without a scope it counts every arrival of
 * every worker from the start; a scope narrows what counts: a window of the run (a round), or only
 * the worker holding the most running tasks at that moment (seed 002 kills that one).
 */
export const pointScopeFields = {
  point: oneOf(KILL_POINTS),
  occurrence: positive().default(1).meta({ description: 'Fire at the occurrence-th (from 1) arrival at this point that the scope counts; default 1.' }),
  fromMs: nonNegative().optional().meta({ description: 'Count only arrivals in [fromMs, toMs), in ms from the start of the run.' }),
  toMs: nonNegative().optional(),
  target: oneOf(['any', 'busiest']).optional().meta({ description: "'busiest': count only arrivals of a worker that holds the most running tasks right then." }),
  delayMs: nonNegative()
    .optional()
    .meta({
      description:
        'The process goes on for delayMs after reaching the point and then dies (or freezes): a delay shorter than the call that follows lands in that call. 0 or absent: a kill happens at the point itself, before the call; a pause at the next await.',
    }),
  label: z.string({ error: 'expected a string' }).optional().meta({ description: "A name for reports, put in the kill or pause note, e.g. 'round 3: during a model call'." }),
};

export interface PointFaultScope {
  point: KillPoint;
  occurrence: number;
  fromMs?: number;
  toMs?: number;
  target?: 'any' | 'busiest';
  delayMs?: number;
  label?: string;
  /** Count only arrivals in a run of this tenant (error-at); an arrival that names no tenant does not count. */
  tenant?: string;
}

/** A window must end after it starts. */
export function scopeProblems(scope: { fromMs?: number | undefined; toMs?: number | undefined }, context: z.core.$RefinementCtx<unknown>): void {
  if (scope.fromMs !== undefined && scope.toMs !== undefined && scope.toMs <= scope.fromMs) {
    context.addIssue({ code: 'custom', path: ['toMs'], message: `must be after fromMs (${scope.fromMs}), got ${scope.toMs}` });
  }
}

/**
 * The points a queue call that just returned puts its worker at: right after checkpoint A committed
 * (between the two checkpoints of a step), right after the run's complete committed.
 */
export function pointAfterQueueCall(op: string, args: readonly unknown[], result: unknown): KillPoint | undefined {
  const ok = (result as { ok?: boolean } | undefined)?.ok === true;
  if (op === 'checkpoint' && ok && (args[3] as { kind: string }).kind === 'A') return 'between_checkpoints';
  if (op === 'complete' && ok) return 'after_terminal_write';
  return undefined;
}

/** Counts arrivals at points for every point fault of a plan, each within its scope. */
export class PointCounter<Fault extends PointFaultScope> {
  /** Arrivals each point fault has counted so far, by its index in the plan. */
  private readonly counts: number[] = [];

  constructor(
    private readonly faults: readonly Fault[],
    /** Running tasks per worker index (0 for a worker with no live incarnation), for 'busiest' scopes. */
    private readonly runningTasks: () => readonly number[],
  ) {}

  /**
   * Counts an arrival of `worker` at `point`, `sinceStartMs` into the run, for every fault whose scope
   * takes it; returns the first fault whose count reached its occurrence now, if any. An unscoped fault
   * counts every arrival from the start, as the plain kill-at always has.
   */
  arrive(point: KillPoint, worker: number, sinceStartMs: number, tenant?: string): Fault | undefined {
    let busiest: boolean | undefined;
    let fired: Fault | undefined;
    this.faults.forEach((fault, index) => {
      if (fault.point !== point) return;
      if (fault.fromMs !== undefined && sinceStartMs < fault.fromMs) return;
      if (fault.toMs !== undefined && sinceStartMs >= fault.toMs) return;
      if (fault.tenant !== undefined && fault.tenant !== tenant) return;
      if (fault.target === 'busiest' && !(busiest ??= this.isBusiest(worker))) return;
      const count = (this.counts[index] ?? 0) + 1;
      this.counts[index] = count;
      if (fired === undefined && count === fault.occurrence) fired = fault;
    });
    return fired;
  }

  /** Seed 002: the worker holding the most running tasks right now (ties all count); never an idle one. */
  private isBusiest(worker: number): boolean {
    const running = this.runningTasks();
    const mine = running[worker] ?? 0;
    return mine > 0 && running.every((other) => other <= mine);
  }
}
