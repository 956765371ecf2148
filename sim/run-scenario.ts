import { allCheckers } from './checkers/index.ts';
import { coverageMarks } from './checkers/marks.ts';
import { checkExpectations } from './expectations/index.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RunReport, Verdict, Violation } from './report-types.ts';
import type { ScenarioSpec } from './scenario.ts';
import { worldFor } from './seed-world.ts';
import type { WorldResult, WorldStore } from './world.ts';
import { simPglite, type SimStore } from './store/pglite.ts';

export interface RunScenarioOptions {
  /** A catalogue scenario or a validated file (sim/check/scenario-source.ts resolves a name or a path into one). */
  scenario: ScenarioSpec;
  seed: string;
  /** Replaces the scenario's fault plan (replaying or shrinking a counterexample). */
  plan?: FaultPlan;
  /** The database the world runs on: SQLite (the default) or the PostgreSQL store on this thread's PGlite (sim/store/pglite.ts). */
  store?: SimStore;
}

/** Runs one seed of one scenario in the simulator and judges it. */
export async function simulate(options: RunScenarioOptions): Promise<{ world: WorldResult; report: RunReport }> {
  const store: WorldStore = options.store === 'pglite' ? { kind: 'pglite', db: await simPglite() } : { kind: 'sqlite' };
  const world = await worldFor(options.scenario, options.seed, options.plan, store).run();
  return { world, report: judge(world) };
}

export async function runScenario(options: RunScenarioOptions): Promise<RunReport> {
  return (await simulate(options)).report;
}

/** S9: a crash is a harness failure (reported as nondeterminism's exit class); safety beats liveness. */
export function judge(world: WorldResult): RunReport {
  const violations: Violation[] = [];
  if (world.crash !== undefined) {
    const error = world.crash as Error;
    violations.push({ invariant: 'harness', kind: 'safety', message: `harness crash: ${error?.stack ?? String(error)}` });
  } else {
    for (const checker of allCheckers) violations.push(...checker.check(world));
    violations.push(...checkExpectations(world));
  }
  const verdict: Verdict =
    world.crash !== undefined
      ? 'nondeterminism'
      : violations.some((v) => v.kind === 'safety')
        ? 'safety'
        : violations.length > 0
          ? 'liveness'
          : 'pass';
  return {
    scenario: world.scenario.name,
    seed: world.seed,
    traceHash: world.history.traceHash(),
    verdict,
    violations,
    marks: coverageMarks(world),
    metrics: metricsOf(world),
  };
}

function metricsOf(world: WorldResult): Record<string, number> {
  const counts = world.final.countsByState;
  const claims = world.history.entries().filter((entry) => entry.type === 'ok' && entry.op === 'claim').length;
  return {
    tasks: world.final.tasks.length,
    done: counts.done,
    failed: counts.failed,
    superseded: counts.superseded,
    cancelled: counts.cancelled,
    expired: counts.expired,
    live: counts.ready + counts.running + counts.uncertain,
    claims,
    providerExecutions: world.provider.executions.length,
    providerRequests: world.provider.requests.length,
    historyEntries: world.history.length,
    loopEvents: world.loopEvents,
    simulatedMs: world.endMs - world.startMs,
    faults: world.plan.timed.length + world.plan.points.length,
  };
}
