/**
 * The harness's own stopwatch, for seeds per second and ETA. It measures the checker, never the
 * simulation: nothing read here reaches a world, so it cannot break S1 or change a trace.
 */
export function wallClockMs(): number {
  return performance.now(); // allow-ambient: measures harness throughput, never fed into a simulation
}

/** Calendar time for the tools' own records (when a Stryker batch ran); never fed into a simulation. */
export function wallClockEpochMs(): number {
  return Date.now(); // allow-ambient: a timestamp for a tool's report, never fed into a simulation
}

export function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString(); // allow-ambient: formats a given time, reads no clock
}
