import { resolveScenarioArgument } from '../../check/scenario-source.ts';
import type { RunReport } from '../../report-types.ts';
import { run, type RunResult } from '../../testing-harness.ts';
import { asUsageError } from '../library-errors.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { commandLine } from '../shell-quote.ts';
import { requireRunnable, storeArgument } from '../store-argument.ts';

/**
 * `leasehold run --scenario NAME|FILE --seed S [--json]`: one simulated run, a front over `run()` of
 * leasehold/testing (sim/testing-harness.ts), which resolves to the report, the exit code and the replay
 * line; `--json` prints that object as it is. The exit code is the verdict's (S9): pass 0, safety 1,
 * liveness 2, nondeterminism 3.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const seed = args.string('seed') as string;
  // Absent only with --agent (command-specs.ts): then the module's own scenario runs.
  const scenario = args.string('scenario');
  const agent = args.string('agent');
  // A bad name or file is exit 64 here, with a hint, before anything runs; run() is given the same argument.
  const source = scenario === undefined ? undefined : resolveScenarioArgument(scenario, `leasehold run --seed ${commandLine([seed])} --scenario`);
  const store = storeArgument(args, 'run --scenario mixed --seed 42');
  if (source !== undefined) requireRunnable(source.spec, store, `run --scenario ${source.file ?? source.name} --seed ${commandLine([seed])}`);
  let result: RunResult;
  try {
    result = await run({ ...(scenario === undefined ? {} : { scenario }), seed, ...(store === 'sqlite' ? {} : { store }), ...(agent === undefined ? {} : { agent }) });
  } catch (error) {
    throw asUsageError(error, `leasehold run ${commandLine([...(source === undefined ? [] : ['--scenario', source.file ?? source.name]), '--seed', seed, ...(agent === undefined ? [] : ['--agent', agent])])}`);
  }
  if (store !== 'sqlite') context.err(`store: ${store}`);
  if (args.boolean('json')) {
    context.out(JSON.stringify(result));
    if (result.replay !== null) context.err(`replay: ${result.replay}`);
  } else {
    context.out(summarise(result));
    if (result.replay !== null) context.out(`replay:     ${result.replay}`);
  }
  return result.exitCode;
}

/** The text form of a run: what `run` prints without --json. */
export function summarise(report: RunReport): string {
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
