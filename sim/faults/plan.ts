/**
 * A fault plan (S4) is data: explicit timed faults, kills at await points, and per-event rates. A
 * swarm plan is drawn per seed into this same shape, so a failing seed's plan can be written out,
 * replayed and shrunk fault by fault.
 */

/** Where a worker can die: before a call, after an external effect but before its response is recorded,
 * between the two checkpoints of a step, or after the terminal write. */
export const KILL_POINTS = ['before_model_call', 'before_tool_call', 'after_effect', 'between_checkpoints', 'after_terminal_write'] as const;
export type KillPoint = (typeof KILL_POINTS)[number];

export type TimedFault =
  /** Kill the worker at a moment, whatever it is awaiting; a new incarnation starts reviveAfterMs later. */
  | { kind: 'kill'; atMs: number; worker: number; reviveAfterMs: number }
  /** Freeze the worker: it misses heartbeats and wakes as a zombie. */
  | { kind: 'pause'; atMs: number; worker: number; durationMs: number }
  /** Close the queue and reopen it from the file with only committed state. */
  | { kind: 'restart'; atMs: number; downMs: number }
  | { kind: 'clock-jump'; atMs: number; deltaMs: number }
  /** A window in which writes meet SQLITE_BUSY with this probability. */
  | { kind: 'busy'; atMs: number; durationMs: number; probability: number };

/**
 * A fault that fires when a worker reaches an await point. Without a scope it counts every arrival of
 * every worker from the start; a scope narrows what counts: a window of the run (a round), or only
 * the worker holding the most running tasks at that moment (seed 002 kills that one).
 */
export type PointFault =
  | (PointFaultScope & {
      kind: 'kill-at';
      reviveAfterMs: number;
    })
  | (PointFaultScope & {
      /** Freeze the worker that reached the point; it wakes durationMs later as a possible zombie. */
      kind: 'pause-at';
      durationMs: number;
    });

export interface PointFaultScope {
  point: KillPoint;
  /** Fire at the occurrence-th (from 1) arrival at this point that the scope counts. */
  occurrence: number;
  /** Count only arrivals in [fromMs, toMs), in ms from the start of the run. */
  fromMs?: number;
  toMs?: number;
  /** 'busiest': count only arrivals of a worker that holds the most running tasks right then. */
  target?: 'any' | 'busiest';
  /**
   * The process goes on for delayMs after reaching the point and then dies (or freezes): a delay
   * shorter than the call that follows lands in that call, e.g. during a model call. 0 or absent: a
   * kill happens at the point itself, before the call; a pause at the next await.
   */
  delayMs?: number;
  /** A name for reports, put in the kill or pause note, e.g. 'round 3: during a model call'. */
  label?: string;
}

/** Probabilities per event, drawn from the faults stream. */
export interface FaultRates {
  slowToolProbability: number;
  hungToolProbability: number;
  lostResponseProbability: number;
  duplicateDeliveryProbability: number;
  toolErrorProbability: number;
  /** Per claim: the holder's writes are sent again once its lease has moved on (StaleWriter). */
  staleWriteProbability?: number;
}

export interface FaultPlan {
  timed: TimedFault[];
  points: PointFault[];
  rates: FaultRates;
}

export const NO_RATES: FaultRates = Object.freeze({
  slowToolProbability: 0,
  hungToolProbability: 0,
  lostResponseProbability: 0,
  duplicateDeliveryProbability: 0,
  toolErrorProbability: 0,
});

export function emptyPlan(): FaultPlan {
  return { timed: [], points: [], rates: { ...NO_RATES } };
}

/** Faults only count in the safety phase (S5); this is how many a plan holds, for reports and shrinking. */
export function faultCount(plan: FaultPlan): number {
  const rateCount = Object.values(plan.rates).filter((rate) => rate > 0).length;
  return plan.timed.length + plan.points.length + rateCount;
}
