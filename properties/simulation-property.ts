/**
 * The machinery every simulation property shares: run one generated case in the World, judge it with
 * one invariant family's checkers, and, when fast-check has shrunk a failure, write the counterexample
 * file and fail with a message whose last line replays it.
 */
import { fc, test } from '@fast-check/vitest';
import { checkDeterminism } from '../sim/checkers/i14-determinism.ts';
import type { Checker } from '../sim/checkers/types.ts';
import { faultCount } from '../sim/faults/plan.ts';
import { drawnPartOf, workloadTenants } from '../sim/workloads/index.ts';
import type { Verdict, Violation } from '../sim/report-types.ts';
import { World, type WorldResult } from '../sim/world.ts';
import type { SimulationCase } from './arbitraries.ts';
import { fastCheckSeed } from './budget.ts';
import { displayPath, replayCommand, writePropertyCounterexample } from './counterexample.ts';

/** The checkers of one invariant family, and whether each case runs twice (I14). */
export interface InvariantFamily {
  suite: string;
  checkers: readonly Checker[];
  twice?: boolean;
}

export interface CaseOutcome {
  verdict: Verdict;
  violations: Violation[];
  traceHash: string;
}

/** Simulated runs made in this process, for the run count a suite reports. */
export const runCounter = { worldRuns: 0 };

/** How many violations a failure message lists; the file holds them all. */
const LISTED_VIOLATIONS = 10;

/** One turn of Node's event loop: rejections left unhandled by the run are reported before it ends. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs `body` while collecting promise rejections that nothing handled. The simulator has no real
 * timers, so a rejection escaping a World run (a worker's promise that nobody awaits) surfaces here,
 * during the run; it is a harness failure of this case, so it is taken from the test runner's own
 * listeners for the duration and reported, shrunk, with a counterexample like any violation.
 */
export async function collectingEscapes<T>(body: () => Promise<T>): Promise<{ value: T; escaped: unknown[] }> {
  const pending = new Map<Promise<unknown>, unknown>();
  const onUnhandled = (reason: unknown, promise: Promise<unknown>) => pending.set(promise, reason);
  const onHandled = (promise: Promise<unknown>) => pending.delete(promise);
  const others = process.listeners('unhandledRejection');
  process.removeAllListeners('unhandledRejection');
  process.on('unhandledRejection', onUnhandled);
  process.on('rejectionHandled', onHandled);
  try {
    const value = await body();
    await nextTurn();
    return { value, escaped: [...pending.values()] };
  } finally {
    process.off('unhandledRejection', onUnhandled);
    process.off('rejectionHandled', onHandled);
    for (const listener of others) process.on('unhandledRejection', listener);
  }
}

async function runWorld(simulation: SimulationCase): Promise<WorldResult | { crash: unknown }> {
  runCounter.worldRuns++;
  try {
    const { value: world, escaped } = await collectingEscapes(() => new World(simulation.scenario, simulation.seed, simulation.plan).run());
    if (escaped.length === 0 || world.crash !== undefined) return world;
    return { ...world, crash: new EscapedRejectionError(escaped) };
  } catch (error) {
    // The World refused the case (or crashed while building): a harness failure, shrunk like any other.
    return { crash: error };
  }
}

/** Promise rejections that escaped a World run, e.g. a dead incarnation's code reaching the queue. */
export class EscapedRejectionError extends Error {
  override readonly name = 'EscapedRejectionError';
  constructor(readonly reasons: unknown[]) {
    const first = reasons[0] as Error | undefined;
    super(`${reasons.length} promise rejection(s) escaped the World run unhandled; the first: ${first?.stack ?? String(first)}`);
  }
}

function crashViolation(crash: unknown): Violation {
  const error = crash as Error | undefined;
  return { invariant: 'harness', kind: 'safety', message: `harness crash: ${error?.stack ?? String(crash)}` };
}

/** A checker that throws is a harness failure of that run, reported (and shrunk) like a violation. */
function checkSafely(checker: Checker, run: WorldResult): Violation[] {
  try {
    return checker.check(run);
  } catch (error) {
    return [{ invariant: 'harness', kind: 'safety', message: `checker ${checker.invariant} (${checker.kind}) threw: ${(error as Error)?.stack ?? String(error)}` }];
  }
}

/** Runs the case (twice for I14) and judges it with the family's checkers; S9's verdict order. */
export async function runCase(simulation: SimulationCase, family: InvariantFamily): Promise<CaseOutcome> {
  const first = await runWorld(simulation);
  if (!('history' in first) || first.crash !== undefined) {
    const traceHash = 'history' in first ? first.history.traceHash() : '';
    return { verdict: 'nondeterminism', violations: [crashViolation(first.crash)], traceHash };
  }
  const traceHash = first.history.traceHash();
  const violations = family.checkers.flatMap((checker) => checkSafely(checker, first));
  if (family.twice === true) {
    const second = await runWorld(simulation);
    if (!('history' in second) || second.crash !== undefined) return { verdict: 'nondeterminism', violations: [crashViolation(second.crash)], traceHash };
    const label = `scenario ${simulation.scenario.name} seed ${JSON.stringify(simulation.seed)} with its fault plan`;
    const unseed = checkDeterminism(traceHash, second.history.traceHash(), label);
    if (unseed.length > 0) return { verdict: 'nondeterminism', violations: [...unseed, ...violations], traceHash };
  }
  // S9: a harness failure (here, a checker that threw) outranks safety, which outranks liveness.
  const verdict: Verdict =
    violations.length === 0 ? 'pass' : violations.some((v) => v.invariant === 'harness') ? 'nondeterminism' : violations.some((v) => v.kind === 'safety') ? 'safety' : 'liveness';
  return { verdict, violations, traceHash };
}

function describeViolation(violation: Violation): string {
  const where = violation.taskId === undefined ? '' : ` [task ${violation.taskId}]`;
  return `${violation.invariant} (${violation.kind}) ${violation.message}${where}`;
}

function listViolations(violations: readonly Violation[]): string[] {
  const listed = violations.slice(0, LISTED_VIOLATIONS).map((violation) => `  ${describeViolation(violation)}`);
  if (violations.length > LISTED_VIOLATIONS) listed.push(`  ... and ${violations.length - LISTED_VIOLATIONS} more in the counterexample file`);
  return listed;
}

/** The predicate fast-check runs and shrinks: it throws, naming the violations, when the case fails. */
export async function checkCase(simulation: SimulationCase, family: InvariantFamily): Promise<void> {
  const outcome = await runCase(simulation, family);
  if (outcome.verdict === 'pass') return;
  throw new Error([`${outcome.verdict}: ${outcome.violations.length} violation(s)`, ...listViolations(outcome.violations)].join('\n'));
}

export function simulationProperty(cases: fc.Arbitrary<SimulationCase>, family: InvariantFamily): fc.IAsyncProperty<[SimulationCase]> {
  return fc.asyncProperty(cases, (simulation) => checkCase(simulation, family));
}

function describeCase(simulation: SimulationCase): string {
  const { scenario, plan, seed } = simulation;
  const kinds = [...plan.timed.map((fault) => `${fault.kind}@${fault.atMs}ms`), ...plan.points.map((fault) => `${fault.kind} ${fault.point} #${fault.occurrence}`)];
  const rates = Object.entries(plan.rates).filter(([, rate]) => rate > 0);
  kinds.push(...rates.map(([name, rate]) => `${name}=${rate}`));
  const drawn = drawnPartOf(scenario.workload);
  return (
    `${faultCount(plan)} fault(s)${kinds.length === 0 ? '' : ` (${kinds.join(', ')})`}; ` +
    `${drawn?.kind === 'topics' ? drawn.count : 0} topic(s) over ${workloadTenants(scenario.workload).length} tenant(s), ${scenario.workers.count} worker(s) x ${scenario.workers.slots} slot(s); seed ${JSON.stringify(seed)}`
  );
}

/**
 * fast-check's asyncReporter for a simulation property: on failure, replays the shrunk case once more
 * for its verdict and trace hash, writes reports/failures/<suite>-<hash>.json, and throws an error whose
 * last line is the replay command.
 */
export async function reportFailure(details: fc.RunDetails<[SimulationCase]>, family: InvariantFamily, property: string, directory?: string): Promise<void> {
  if (!details.failed) return;
  if (details.counterexample === null) throw new Error(fc.defaultReportMessage(details) ?? `${property}: failed without a counterexample`);
  const [simulation] = details.counterexample;
  let outcome = await runCase(simulation, family);
  const notes: string[] = [];
  if (details.interrupted) {
    notes.push(`fast-check's time limit stopped the shrinking after ${details.numShrinks} step(s): the case fails, but may not be the smallest that does.`);
  }
  if (outcome.verdict === 'pass') {
    // The case failed under fast-check and passes now: the run itself is not reproducible.
    const original = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    notes.push('The shrunk case passed when run again: the simulation is not deterministic for it (I14).');
    outcome = { verdict: 'nondeterminism', violations: [{ invariant: 'I14', kind: 'safety', message: `failed once, then passed: ${original}` }], traceHash: outcome.traceHash };
  }
  const { path } = writePropertyCounterexample(
    {
      suite: family.suite,
      property,
      scenario: simulation.scenario,
      seed: simulation.seed,
      plan: simulation.plan,
      verdict: outcome.verdict,
      violations: outcome.violations,
      traceHash: outcome.traceHash,
      fastCheck: {
        seed: details.seed,
        ...(details.counterexamplePath === null ? {} : { path: details.counterexamplePath }),
        numRuns: details.numRuns,
        numShrinks: details.numShrinks,
        ...(details.interrupted ? { shrinkInterrupted: true } : {}),
      },
    },
    directory,
  );
  const lines = [
    `${family.suite} property failed: ${property}`,
    `fast-check found it at run ${details.numRuns} (seed ${details.seed}, path ${details.counterexamplePath ?? '-'}) and shrank it ${details.numShrinks} time(s) to:`,
    `  ${describeCase(simulation)}`,
    ...notes,
    `verdict ${outcome.verdict}, ${outcome.violations.length} violation(s):`,
    ...listViolations(outcome.violations),
    `Counterexample: ${displayPath(path)}`,
    `Replay: ${replayCommand(path)}`,
  ];
  throw new Error(lines.join('\n'));
}

export interface SimulationTestOptions {
  family: InvariantFamily;
  cases: fc.Arbitrary<SimulationCase>;
  /** fast-check numRuns: cases to generate (each costs one World run, two with `twice`). */
  numRuns: number;
}

/** Generous: a run is bounded by its phases, and shrinking a failure may take a few hundred more runs. */
const TIMEOUT_MS = 30 * 60_000;

/**
 * fast-check stops here, shrinking included, three minutes before vitest's timeout. A failure found in
 * time is then still reported with the smallest case shrinking reached, its counterexample file is
 * written and the replay line printed, where vitest's timeout would have reported only "timed out".
 * A property that is merely slow fails here too (markInterruptAsFailure), naming how far it got.
 */
export const PROPERTY_TIME_LIMIT_MS = TIMEOUT_MS - 3 * 60_000;

/** Registers one property as a vitest test through @fast-check/vitest. */
export function simulationTest(name: string, options: SimulationTestOptions): void {
  const { family, cases, numRuns } = options;
  const seed = fastCheckSeed();
  test.prop([cases], {
    numRuns,
    interruptAfterTimeLimit: PROPERTY_TIME_LIMIT_MS,
    markInterruptAsFailure: true,
    ...(seed === undefined ? {} : { seed }),
    asyncReporter: (details) => reportFailure(details, family, name),
  })(name, (simulation) => checkCase(simulation, family), TIMEOUT_MS);
}
