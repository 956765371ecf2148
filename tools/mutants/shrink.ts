/**
 * Shrinks one counterexample written by `leasehold check`, inside a sabotaged copy of the project
 * (tools/mutants/run.ts runs it there with tsx, so it simulates the sabotaged src/):
 *
 *   tsx tools/mutants/shrink.ts COUNTEREXAMPLE.json INVARIANT OUT.json [MAX_RUNS] [MAX_MS]
 *
 * A thin wrapper over the shrinker `leasehold shrink` runs (sim/check/shrink.ts, where the method is
 * described): the shrunk case is written to OUT.json in the counterexample format, so `leasehold replay
 * OUT.json` reruns it (in the sabotaged copy), and one JSON line on stdout says what came of it
 * (reproduced, runs, exhausted, before, after, violations, file). Progress goes to stderr.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readCounterexample } from '../../sim/check/counterexample.ts';
import { shrinkCase, type ShrinkOutcome } from '../../sim/check/shrink.ts';

export type { ShrinkOutcome };

async function main(argv: string[]): Promise<void> {
  const [file, invariant, out, maxRunsArg, maxMsArg] = argv;
  if (file === undefined || invariant === undefined || out === undefined) {
    process.stderr.write('usage: tsx tools/mutants/shrink.ts COUNTEREXAMPLE.json INVARIANT OUT.json [MAX_RUNS] [MAX_MS]\n');
    process.exit(64);
  }
  const outcome = await shrinkCase({
    case: readCounterexample(file),
    invariant,
    out,
    maxRuns: Number(maxRunsArg ?? 40),
    maxMs: Number(maxMsArg ?? 180_000),
    from: file,
    onProgress: (line) => void process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(outcome)}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await main(process.argv.slice(2));
}
