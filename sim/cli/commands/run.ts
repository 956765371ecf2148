import { resolveScenarioArgument } from '../../check/scenario-source.ts';
import type { RunReport } from '../../report-types.ts';
import { runScenario } from '../../run-scenario.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { exitCodeForVerdict } from '../exit-codes.ts';
import { commandLine } from '../shell-quote.ts';
import { requireRunnable, storeArgument } from '../store-argument.ts';

/**
 * `leasehold run --scenario NAME|FILE --seed S [--json]`: one simulated run. The exit code is the
 * verdict's (S9): pass 0, safety 1, liveness 2, nondeterminism 3.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const seed = args.string('seed') as string;
  // A bad name or file is exit 64 here, before anything runs; the runner gets the scenario itself.
  const source = resolveScenarioArgument(args.string('scenario') as string, `leasehold run --seed ${commandLine([seed])} --scenario`);
  const store = storeArgument(args, 'run --scenario mixed --seed 42');
  requireRunnable(source.spec, store, `run --scenario ${source.file ?? source.name} --seed ${commandLine([seed])}`);
  const report = await runScenario({ scenario: source.spec, seed, store });
  const replay = `leasehold ${commandLine(['replay', '--scenario', source.file ?? source.name, '--seed', report.seed, ...(store === 'sqlite' ? [] : ['--store', store])])}`;
  if (store !== 'sqlite') context.err(`store: ${store}`);
  if (args.boolean('json')) {
    context.out(JSON.stringify(report));
    if (report.verdict !== 'pass') context.err(`replay: ${replay}`);
  } else {
    context.out(summarise(report));
    if (report.verdict !== 'pass') context.out(`replay:     ${replay}`);
  }
  return exitCodeForVerdict(report.verdict);
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
