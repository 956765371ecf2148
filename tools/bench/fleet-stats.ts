/**
 * The arithmetic of the `fleet` section (fleet.ts), kept apart from processes and timers so that it can
 * be tested: pickup percentiles, a throughput phase's rate from its handler timestamps, and the per-round
 * ratios that become the section's figures.
 */
import { median, quantile } from './timing.ts';

export interface PickupStats {
  n: number;
  /** Nearest-rank percentiles (timing.ts quantile), in ms; NaN with no samples. */
  p50: number;
  p99: number;
  max: number;
  /** Probes that were not picked up before the probe timeout (their samples are the timeout, a lower bound). */
  timeouts: number;
}

export function pickupStats(samplesMs: readonly number[], timeouts = 0): PickupStats {
  return {
    n: samplesMs.length,
    p50: quantile(samplesMs, 0.5),
    p99: quantile(samplesMs, 0.99),
    max: samplesMs.length === 0 ? Number.NaN : Math.max(...samplesMs),
    timeouts,
  };
}

export interface ThroughputPhase {
  /** Wall time (ms) just before the fleet was told to start on the backlog. */
  t0: number;
  /** Wall times (ms) at which handlers of the backlog's tasks ended, in any order. */
  ends: readonly number[];
  /** Tasks in the backlog. */
  backlog: number;
  /** Wall time at which the phase was cut off when the backlog was not done by then; undefined when it was. */
  cutAt?: number;
}

export interface Throughput {
  /** Tasks per second. */
  rate: number;
  /** Handlers that ended after t0 (the ones that count). */
  counted: number;
  /** Handlers that ended before t0: a worker that was being stopped took a task while the backlog was written. */
  early: number;
  /** Whether the whole backlog was done (else the phase was cut at cutAt). */
  complete: boolean;
  /** The span the rate is over, in ms. */
  spanMs: number;
}

/**
 * Tasks per second over a throughput phase: the handlers that ended after t0, divided by the span from
 * t0 to the last of them when the whole backlog was done, or to the cut-off when it was not (so a fleet
 * that is cut off is not credited with the idle time after its last task). A handler that ended before
 * t0 is not counted: it ran before the fleet was told to start.
 */
export function throughputOf(phase: ThroughputPhase): Throughput {
  const after = phase.ends.filter((t) => t >= phase.t0);
  const early = phase.ends.length - after.length;
  const complete = phase.ends.length >= phase.backlog;
  const end = complete || phase.cutAt === undefined ? Math.max(phase.t0, ...after) : phase.cutAt;
  const spanMs = end - phase.t0;
  const rate = spanMs > 0 ? (after.length * 1000) / spanMs : Number.NaN;
  return { rate, counted: after.length, early, complete, spanMs };
}

/**
 * Per-round ratios a[r] / b[r] over the rounds both contenders have a finite figure for, and their
 * median (the section's figure). A round where either figure is missing or not finite is left out,
 * so one failed probe set does not turn the whole figure into NaN; the count says how many remained.
 */
export function roundRatios(a: readonly number[], b: readonly number[]): { ratios: number[]; median: number } {
  const ratios: number[] = [];
  for (let r = 0; r < Math.min(a.length, b.length); r++) {
    const x = a[r]!;
    const y = b[r]!;
    if (Number.isFinite(x) && Number.isFinite(y) && y !== 0) ratios.push(x / y);
  }
  return { ratios, median: median(ratios) };
}
