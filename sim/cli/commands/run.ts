import type { RunReport } from '../../report-types.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { EXIT_HARNESS, exitCodeForVerdict } from '../exit-codes.ts';
import { commandLine } from '../shell-quote.ts';
import { resolveScenarioArgument } from '../../check/scenario-source.ts';
import type { ScenarioSpec } from '../../scenario.ts';

type RunScenario = (options: { scenario: ScenarioSpec; seed: string }) => Promise<RunReport>;

/**
 * `leasehold run --scenario NAME|FILE --seed S [--json]`: one simulated run. The exit code is the
 * verdict's (S9): pass 0, safety 1, liveness 2, nondeterminism 3.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const seed = args.string('seed') as string;
  // A bad name or file is exit 64 here, before anything runs; the runner gets the scenario itself.
  const source = resolveScenarioArgument(args.string('scenario') as string, `leasehold run --seed ${commandLine([seed])} --scenario`);
  const runner = await context.importSimModule('run-scenario.ts');
  if (runner === undefined) {
    context.err('leasehold: run needs the scenario runner sim/run-scenario.ts, which is not in this build yet; nothing was run. Try: leasehold demo');
    return EXIT_HARNESS;
  }
  if (typeof runner.runScenario !== 'function') throw new Error('sim/run-scenario.ts does not export runScenario({ scenario, seed })');
  const report = await (runner.runScenario as RunScenario)({ scenario: source.spec, seed });
  assertReport(report);
  const replay = `leasehold ${commandLine(['replay', '--scenario', source.file ?? source.name, '--seed', report.seed])}`;
  if (args.boolean('json')) {
    context.out(JSON.stringify(report));
    if (report.verdict !== 'pass') context.err(`replay: ${replay}`);
  } else {
    context.out(summarise(report));
    if (report.verdict !== 'pass') context.out(`replay:     ${replay}`);
  }
  return exitCodeForVerdict(report.verdict);
}

function summarise(report: RunReport): string {
  const lines = [
    `scenario:   ${report.scenario}`,
    `seed:       ${report.seed}`,
    `verdict:    ${report.verdict}`,
    `trace hash: ${report.traceHash}`,
    `violations: ${report.violations.length === 0 ? 'none' : report.violations.length}`,
  ];
  for (const violation of report.violations) {
    const where = [violation.taskId === undefined ? '' : `task ${violation.taskId}`, violation.at === undefined ? '' : `history #${violation.at.join(', #')}`]
      .filter(Boolean)
      .join('; ');
    lines.push(`  ${violation.invariant} (${violation.kind}) ${violation.message}${where === '' ? '' : ` [${where}]`}`);
  }
  lines.push(`marks:      ${pairs(report.marks)}`, `metrics:    ${pairs(report.metrics)}`);
  return lines.join('\n');
}

function pairs(record: Record<string, number>): string {
  const entries = Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length === 0 ? 'none' : entries.map(([name, count]) => `${name}=${count}`).join(', ');
}

/** A malformed report is a harness defect; catching it here keeps a wrong exit code from looking like a verdict. */
function assertReport(report: unknown): asserts report is RunReport {
  const candidate = report as Partial<RunReport> | null;
  const problems = [
    typeof candidate?.scenario === 'string' ? '' : 'scenario',
    typeof candidate?.seed === 'string' ? '' : 'seed',
    typeof candidate?.traceHash === 'string' ? '' : 'traceHash',
    typeof candidate?.verdict === 'string' ? '' : 'verdict',
    Array.isArray(candidate?.violations) ? '' : 'violations',
    typeof candidate?.marks === 'object' && candidate?.marks !== null ? '' : 'marks',
    typeof candidate?.metrics === 'object' && candidate?.metrics !== null ? '' : 'metrics',
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`runScenario returned a report without a valid ${problems.join(', ')}`);
}
