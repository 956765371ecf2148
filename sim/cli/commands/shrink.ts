import { InputError } from '../../../src/queue/errors.ts';
import { ScenarioFileError } from '../../check/scenario-file.ts';
import { shrink, shrunkPath, type ShrinkResult } from '../../testing-harness.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';
import { storeArgument } from '../store-argument.ts';
import { UsageError } from '../usage-error.ts';

/**
 * `leasehold shrink FILE.json [--out FILE.json] [--invariant ID] [--max-runs N] [--max-ms MS] [--store STORE]
 * [--json]` (SPEC T4): a front over `shrink()` of leasehold/testing (sim/check/shrink.ts has the method).
 * Progress goes to stderr, one line per candidate; stdout gets what was removed and the line that replays
 * the shrunk file (or with --json, one JSON object). Exit code (S9): the shrunk case's verdict's (1 safety,
 * 2 liveness, 3 a crash), 3 when the file no longer fails as it recorded, 64 for bad usage or a bad file.
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const file = args.positionals[0];
  if (file === undefined) throw new UsageError('shrink needs a counterexample file (FILE.json)', 'leasehold shrink reports/failures/mixed-42.json');
  const store = storeArgument(args, `shrink ${file}`);
  const out = args.string('out');
  const invariant = args.string('invariant');
  const maxRuns = args.integer('max-runs');
  const maxMs = args.integer('max-ms');
  let result: ShrinkResult;
  try {
    result = await shrink({
      file,
      ...(out === undefined ? {} : { out }),
      ...(invariant === undefined ? {} : { invariant }),
      ...(maxRuns === undefined ? {} : { maxRuns }),
      ...(maxMs === undefined ? {} : { maxMs }),
      ...(store === 'sqlite' ? {} : { store }),
      progress: (line) => context.err(line),
    });
  } catch (error) {
    if (error instanceof ScenarioFileError) throw new UsageError(`bad counterexample file ${error.message}`, 'leasehold shrink FILE.json (a file written by leasehold check)');
    if (error instanceof InputError) throw new UsageError(`shrink: ${flagOf(error.field)} ${error.message.slice(error.field.length + 1)}`, `leasehold shrink ${file}${error.field === 'out' ? ` --out ${shrunkPath(file)}` : ''}`);
    throw error;
  }
  if (args.boolean('json')) context.out(JSON.stringify(result));
  else for (const line of describe(result)) context.out(line);
  if (result.note !== undefined) context.err(`leasehold: ${result.note}`);
  return result.exitCode;
}

/** The text form: what was removed, the shrunk case's violation, the replay line. */
export function describe(result: ShrinkResult): string[] {
  if (!result.reproduced) return [`shrink:     ${result.from}: not reproduced (${result.verdict}); nothing written`];
  const first = result.violations.find((violation) => violation.invariant === result.invariant);
  return [
    `shrunk:     ${result.from} -> ${result.file}${result.exhausted ? ' (the budget ran out: it may shrink further with more --max-runs or --max-ms)' : ''}`,
    `invariant:  ${result.invariant}${first === undefined ? '' : ` (${first.kind}) ${first.message.split('\n')[0]}`}`,
    `faults:     ${result.before.faults} -> ${result.after.faults} (${result.before.faults - result.after.faults} removed)`,
    `tasks:      ${result.before.tasks} -> ${result.after.tasks} (${result.before.tasks - result.after.tasks} removed)`,
    `workload:   ${result.workload.length === 0 ? 'unchanged' : result.workload.join(', ')}`,
    `runs:       ${result.runs}`,
    `verdict:    ${result.verdict} (exit ${result.exitCode})`,
    `replay:     ${result.replay}`,
  ];
}

function flagOf(field: string): string {
  return { maxRuns: '--max-runs', maxMs: '--max-ms', out: '--out', invariant: '--invariant', store: '--store', file: 'FILE.json' }[field] ?? field;
}
