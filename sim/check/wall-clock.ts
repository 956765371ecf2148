/**
 * The harness's own stopwatch, for seeds per second and ETA. It measures the checker, never the
 * simulation: nothing read here reaches a world, so it cannot break S1 or change a trace.
 */
export function wallClockMs(): number {
  return performance.now(); // allow-ambient: measures harness throughput, never fed into a simulation
}
