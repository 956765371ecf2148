import { InvariantError } from '../src/queue/errors.ts';
import { allCheckers } from './checkers/index.ts';
import { coverageMarks } from './checkers/marks.ts';
import { checkExpectations } from './expectations/index.ts';
import type { FaultPlan } from './faults/plan.ts';
import type { RunReport, Verdict, Violation } from './report-types.ts';
import type { ScenarioSpec } from './scenario.ts';
import { worldFor } from './seed-world.ts';
import type { WorldResult, WorldStore } from './world.ts';
import { simPglite, type SimStore } from './store/pglite.ts';
import type { SimAgent } from './actors/agent-module.ts';
import { teamViolations } from './checkers/team-invariants.ts';

export interface RunScenarioOptions {
  /** A catalogue scenario or a validated file (sim/check/scenario-source.ts resolves a name or a path into one). */
  scenario: ScenarioSpec;
  seed: string;
  /** Replaces the scenario's fault plan (replaying or shrinking a counterexample). */
  plan?: FaultPlan;
  /** The database the world runs on: SQLite (the default) or the PostgreSQL store on this thread's PGlite (sim/store/pglite.ts). */
  store?: SimStore;
  /** T2: a team's agent module (its path, or loaded) to run instead of the built-in scripted model and tools. */
  agent?: string | SimAgent;
}

/** Runs one seed of one scenario in the simulator and judges it. */
export async function simulate(options: RunScenarioOptions): Promise<{ world: WorldResult; report: RunReport }> {
  const store: WorldStore = options.store === 'pglite' ? { kind: 'pglite', db: await simPglite() } : { kind: 'sqlite' };
  // Imported only for an agent run: a run of the built-in agent never loads src/worker/agent.ts (the coverage gate counts what it loads).
  const agent = typeof options.agent === 'string' ? await (await import('./actors/agent-module.ts')).loadSimAgent(options.agent) : options.agent;
  const world = await worldFor(options.scenario, options.seed, options.plan, store, agent).run();
  return { world, report: judge(world) };
}

export async function runScenario(options: RunScenarioOptions): Promise<RunReport> {
  return (await simulate(options)).report;
}

/**
 * What stopped a run that threw, when it was the design refusing a bug rather than the harness failing
 * (issue 35): the state machine's edge table or another of the core's own invariant checks (an
 * InvariantError), or the schema (a CHECK, NOT NULL, UNIQUE or foreign-key constraint of SQLite or
 * PostgreSQL). Looked for along the error's `cause` chain, as a store may wrap what the driver threw.
 */
export function refusalOf(crash: unknown): { by: 'state machine' | 'core' | 'schema'; message: string } | undefined {
  for (let error = crash, depth = 0; error !== null && typeof error === 'object' && depth < 8; error = (error as { cause?: unknown }).cause, depth++) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof InvariantError) return { by: / cannot move it /.test(message) ? 'state machine' : 'core', message };
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^23\d{3}$/.test(code))) return { by: 'schema', message: `${code}: ${message}` };
  }
  return undefined;
}

/**
 * S9: a crash is a harness failure (reported as nondeterminism's exit class); safety beats liveness. A
 * crash that is a refusal (refusalOf: the state machine, the core's invariant checks or the schema said
 * no to a move) is a finding of its own, not a harness failure: a safety violation `refused` naming what
 * refused it ("refused by the state machine: task 3: supersede cannot move it uncertain -> superseded"),
 * beside what the safety checkers find in the run up to it (the liveness ones are not asked: the run
 * stopped early), so the verdict is safety and the exit code 1.
 */
export function judge(world: WorldResult): RunReport {
  const violations: Violation[] = [];
  const refusal = world.crash === undefined ? undefined : refusalOf(world.crash);
  if (refusal !== undefined) {
    violations.push({ invariant: 'refused', kind: 'safety', message: `refused by the ${refusal.by}: ${refusal.message}` });
    for (const checker of allCheckers) if (checker.kind === 'safety') violations.push(...checker.check(world));
  } else if (world.crash !== undefined) {
    const error = world.crash as Error;
    violations.push({ invariant: 'harness', kind: 'safety', message: `harness crash: ${error?.stack ?? String(error)}` });
  } else {
    for (const checker of allCheckers) violations.push(...checker.check(world));
    violations.push(...checkExpectations(world));
    // T3: the agent module's own invariants, beside the harness's, each under its own name.
    violations.push(...teamViolations(world));
  }
  const verdict: Verdict =
    world.crash !== undefined && refusal === undefined
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
  let claims = 0;
  for (const entry of world.history.entries()) if (entry.type === 'ok' && entry.op === 'claim') claims++;
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
