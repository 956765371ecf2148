import { simulate } from '../run-scenario.ts';
import type { ScenarioSpec } from '../scenario.ts';
import { digestRun } from '../report/digest.ts';
import { windowTally } from '../checkers/windows.ts';
import type { DigestRequest, JobResult } from './types.ts';
import type { Job } from './seeds.ts';
import { wallClockMs } from './wall-clock.ts';
import type { SimStore } from '../store/pglite.ts';
import type { SimAgent } from '../actors/agent-module.ts';

/**
 * Runs one job: one seed of one scenario through the simulator and the checkers. A throw from the
 * simulator is caught and reported as a crash result, so one bad seed does not take the thread with it.
 * The third parameter is unused: it held a test hook, and sim/report/run-report.ts still passes
 * undefined in its place (drop it together with that argument).
 */
export async function runJob(job: Job, spec: ScenarioSpec, digest?: DigestRequest, store: SimStore = 'sqlite', agent?: SimAgent): Promise<JobResult> {
  const started = wallClockMs();
  try {
    // A plain job runs its seed's own plan, exactly as before --explore existed; a child its override.
    // T2: with an agent module, every world runs the team's model and tools (loaded once per thread).
    const withAgent = agent === undefined ? {} : { agent };
    const { report, world } = await simulate(job.plan === undefined ? { scenario: spec, seed: job.seed, store, ...withAgent } : { scenario: spec, seed: job.seed, plan: job.plan, store, ...withAgent });
    // A report's digest of a first run (the unseed repeat only compares hashes); the world is dropped here.
    const digested =
      digest === undefined || job.repeat
        ? {}
        : { digest: digestRun(job.index, world, report, { timeline: report.verdict !== 'pass' || digest.timelineIndexes.includes(job.index) }) };
    return {
      job,
      verdict: report.verdict,
      traceHash: report.traceHash,
      violations: report.violations,
      marks: report.marks,
      windows: windowTally(world),
      metrics: report.metrics,
      plan: world.plan,
      ...digested,
      ...(world.notApplicable === undefined ? {} : { notApplicable: world.notApplicable }),
      elapsedMs: wallClockMs() - started,
    };
  } catch (error) {
    const crash = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
    return { job, verdict: 'nondeterminism', traceHash: '', violations: [], marks: {}, metrics: {}, elapsedMs: wallClockMs() - started, crash };
  }
}
