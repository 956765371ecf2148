import type { EventLoop } from '../event-loop.ts';

/** What the phase loop drives: the world, seen from its two phases. */
export interface PhaseWorld {
  loop: EventLoop;
  phases: { safetyMs: number; livenessMs: number };
  /** Readies the database (a fresh PGlite database, migrated as of now). */
  prepare(): Promise<void>;
  /**
   * Starts everything that acts in the safety phase (arrivals, operator, monitor, faults, supervisor,
   * workers). Synchronous: the loop's watcher and its run follow in the same tick, so no actor advances
   * in between.
   */
  start(startMs: number): void;
  /** Everything that arrived is terminal and the scheduler is up. */
  isDrained(): Promise<boolean>;
  /** The run has crashed (a harness failure): no further phase begins. */
  crashed(): boolean;
  /** The liveness phase begins: faults stop, everyone recovers. */
  beginLiveness(): void;
  /** Events the loop ran in a phase (the cost of the run). */
  ran(events: number): void;
}

/**
 * The phase loop (S5): the safety phase with faults, which ends at its bound or earlier once everything
 * that arrived is terminal (faults left in the plan would only hit idle workers); then, unless the run
 * crashed, the liveness phase, in which faults stop and everyone recovers, and which must drain within
 * its bound. Resolves to the instant the safety phase ended and whether the liveness phase drained.
 */
export async function runPhases(world: PhaseWorld, startMs: number): Promise<{ safetyEndMs: number; drained: boolean }> {
  const { loop, phases } = world;
  await world.prepare();
  world.start(startMs);
  let drainedEarly = false;
  void (async () => {
    while (!drainedEarly && !world.crashed() && loop.now() < startMs + phases.safetyMs) {
      await loop.sleep(1_000);
      if ((await world.isDrained())) drainedEarly = true;
    }
    if (drainedEarly) loop.stop();
  })();
  world.ran((await loop.run({ untilMs: startMs + phases.safetyMs })).events);
  drainedEarly = true;
  const safetyEndMs = loop.now();
  if (!world.crashed()) world.beginLiveness();
  let drained = false;
  const watch = async () => {
    while (!drained && !world.crashed()) {
      await loop.sleep(1_000);
      drained = await world.isDrained();
    }
    loop.stop();
  };
  if (!world.crashed()) {
    void watch();
    world.ran((await loop.run({ untilMs: safetyEndMs + phases.livenessMs })).events);
  }
  return { safetyEndMs, drained };
}
