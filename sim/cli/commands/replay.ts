import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalJson } from '../../canonical-json.ts';
import { readCounterexample, type Counterexample } from '../../check/counterexample.ts';
import { gitState } from '../../check/git.ts';
import { ScenarioFileError } from '../../check/scenario-file.ts';
import { resolveScenarioArgument } from '../../check/scenario-source.ts';
import { namedTask, taskTimeline, timelineAround, TIMELINE_CONTEXT } from '../../check/timeline.ts';
import { faultCount, type FaultPlan } from '../../faults/plan.ts';
import type { Violation } from '../../report-types.ts';
import { simulate } from '../../run-scenario.ts';
import type { ScenarioSpec } from '../../scenario.ts';
import { findScenario } from '../../scenarios/registry.ts';
import { recordsFlatWorkload } from '../../workloads/legacy.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_HARNESS, exitCodeForVerdict } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';
import { asUsageError } from '../library-errors.ts';
import { requireRunnable, storeArgument } from '../store-argument.ts';

interface ReplayTarget {
  scenario: ScenarioSpec;
  seed: string;
  /** A team's agent module: --agent FILE, or the one the counterexample file records. */
  agent?: string;
  plan?: FaultPlan;
  recorded?: Counterexample;
  notes: string[];
}

/**
 * `leasehold replay (--scenario NAME|FILE --seed S | FILE.json) [--trace FILE.jsonl]`: reruns one seed,
 * with the counterexample's scenario and fault plan when given a file, and prints the verdict, the
 * trace hash (a hash that differs from the file's is nondeterminism or changed code: exit 3) and the
 * history around the first violation. Otherwise the exit code is the verdict's (S9).
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const target = await resolveTarget(args);
  const store = storeArgument(args, 'replay --scenario mixed --seed 42');
  requireRunnable(target.scenario, store, `replay --scenario ${target.scenario.name} --seed ${target.seed}`);
  let ran: Awaited<ReturnType<typeof simulate>>;
  try {
    ran = await simulate({ scenario: target.scenario, seed: target.seed, store, ...(target.plan === undefined ? {} : { plan: target.plan }), ...(target.agent === undefined ? {} : { agent: target.agent }) });
  } catch (error) {
    // An agent module that does not load is bad input (64), not a crash.
    throw asUsageError(error, `leasehold replay --scenario ${target.scenario.name} --seed ${target.seed}`);
  }
  const { world, report } = ran;
  // A run that crashed in the check recorded no hash (''); then there is nothing to compare.
  const recordedHash = target.recorded?.traceHash || undefined;
  const hashMatches = recordedHash === undefined || recordedHash === report.traceHash;

  context.out(`scenario:   ${target.scenario.name}${target.recorded?.scenarioFile === undefined ? '' : ` (from ${target.recorded.scenarioFile}, as recorded)`}`);
  context.out(`seed:       ${target.seed}`);
  if (target.agent !== undefined) context.out(`agent:      ${target.agent}`);
  if (store !== 'sqlite') context.out(`store:      ${store}${Object.keys(world.notApplicable ?? {}).length === 0 ? '' : ` (not applicable, left out: ${Object.entries(world.notApplicable ?? {}).map(([kind, count]) => `${kind} x${count}`).join(', ')})`}`);
  context.out(`fault plan: ${target.plan === undefined ? 'drawn from the seed' : 'from the counterexample file'} (${faultCount(world.plan)} faults)`);
  if (target.scenario.configSwarm !== undefined) context.out(`config:     drawn from the seed (configSwarm): queue ${JSON.stringify(world.scenario.queue)}, workers ${JSON.stringify(world.scenario.workers)}`);
  for (const note of target.notes) context.out(`note:       ${note}`);
  context.out(`verdict:    ${report.verdict}${target.recorded === undefined ? '' : ` (recorded: ${target.recorded.verdict})`}`);
  context.out(`trace hash: ${report.traceHash}${hashLine(recordedHash, report.traceHash, target.recorded)}`);
  context.out(`violations: ${report.violations.length === 0 ? 'none' : report.violations.length}`);
  for (const violation of report.violations) context.out(`  ${describe(violation)}`);

  const first = report.violations[0];
  if (first !== undefined) {
    context.out('');
    context.out(`timeline around the first violation (${first.invariant}), ${TIMELINE_CONTEXT} entries either side, of ${world.history.length}; >> marks the offending entries:`);
    for (const line of timelineAround(world.history.entries(), first, world.startMs)) context.out(line);
    // The task the violation is about (its taskId, or the one task its message names, as an
    // expectation's does): its own entries from enqueue to the end, where the story of one task is read.
    const taskId = namedTask(first);
    const own = taskId === undefined ? [] : taskTimeline(world.history.entries(), taskId, world.startMs, first.at ?? []);
    if (own.length > 0) {
      context.out('');
      context.out(`timeline of task ${taskId}${first.taskId === undefined ? ' (named in the violation\'s message)' : ''}, its own entries; >> marks the offending ones:`);
      for (const line of own) context.out(line);
    }
  }
  const trace = args.string('trace');
  if (trace !== undefined) {
    mkdirSync(dirname(trace), { recursive: true });
    writeFileSync(trace, world.history.toJsonl());
    context.out(`trace:      ${trace} (${world.history.length} entries, JSON lines)`);
  }
  if (!hashMatches) {
    context.err(`leasehold: replay gave trace hash ${report.traceHash}, the file recorded ${recordedHash}: the code changed since (see git.commit in the file) or the run is nondeterministic (I14)`);
    return EXIT_HARNESS;
  }
  return exitCodeForVerdict(report.verdict);
}

async function resolveTarget(args: ParsedArgs): Promise<ReplayTarget> {
  const file = args.positionals[0];
  if (file === undefined) {
    const agent = args.string('agent');
    const scenario = args.string('scenario');
    if (scenario === undefined) {
      // --agent without --scenario (command-specs.ts): the module's own scenario, as check and run take it.
      try {
        const loaded = await (await import('../../actors/agent-module.ts')).loadSimAgent(agent as string);
        const [source] = (await import('../../check/agent-source.ts')).agentSources(loaded);
        return { scenario: (source as { spec: ScenarioSpec }).spec, seed: args.string('seed') as string, agent: agent as string, notes: [] };
      } catch (error) {
        throw asUsageError(error, `leasehold replay --seed ${args.string('seed') as string} --agent ${agent as string}`);
      }
    }
    const source = resolveScenarioArgument(scenario, `leasehold replay --seed ${args.string('seed') as string} --scenario`);
    return { scenario: source.spec, seed: args.string('seed') as string, ...(agent === undefined ? {} : { agent }), notes: [] };
  }
  if (args.string('agent') !== undefined) throw new UsageError(`a counterexample file records the agent module it ran (or none); --agent goes with --scenario and --seed`, `leasehold replay ${file}`);
  let recorded: Counterexample;
  try {
    recorded = readCounterexample(file);
  } catch (error) {
    if (!(error instanceof ScenarioFileError)) throw error;
    throw new UsageError(`bad counterexample file ${file}: ${error.message}`, 'leasehold replay --scenario mixed --seed 42 (or a file written by leasehold check)');
  }
  const notes: string[] = [];
  const catalogue = recorded.scenarioFile === undefined ? findScenario(recorded.scenario) : undefined;
  if (recordsFlatWorkload(file)) {
    // Its parts are rebuilt from the flat object, not as the catalogue file lists them: the two are not compared.
    notes.push('this file records its workload as one flat object, as files were written before workloads kept their parts; it is read as the parts that draw the same arrivals');
  } else if (catalogue !== undefined && canonicalJson(catalogue as never) !== canonicalJson(recorded.scenarioSpec as never)) {
    notes.push(`the catalogue's ${recorded.scenario} changed since this file was written; replaying the recorded definition`);
  }
  const here = gitState().commit;
  if (recorded.git.commit !== null && here !== undefined && recorded.git.commit !== here) notes.push(`recorded at commit ${recorded.git.commit}; this tree is at ${here}`);
  if (recorded.unseed !== undefined) notes.push(`this seed gave two trace hashes when it was checked: ${recorded.unseed.hashA} and ${recorded.unseed.hashB}`);
  return { scenario: recorded.scenarioSpec, seed: recorded.seed, ...(recorded.plan === undefined ? {} : { plan: recorded.plan }), ...(recorded.agent === undefined ? {} : { agent: recorded.agent }), recorded, notes };
}

function hashLine(recorded: string | undefined, replayed: string, file: Counterexample | undefined): string {
  if (file === undefined) return '';
  if (recorded === undefined) return ' (the file recorded none: the checked run crashed)';
  return recorded === replayed ? ' (matches the recorded hash)' : ` (DIFFERS from the recorded ${recorded})`;
}

function describe(violation: Violation): string {
  const where = [violation.taskId === undefined ? '' : `task ${violation.taskId}`, violation.at === undefined ? '' : `history #${violation.at.join(', #')}`].filter(Boolean).join('; ');
  return `${violation.invariant} (${violation.kind}) ${violation.message}${where === '' ? '' : ` [${where}]`}`;
}
