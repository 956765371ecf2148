import { readFileSync } from 'node:fs';
import type { ScenarioSpec } from '../scenario.ts';
import { parseFaultPlan, parseScenarioFile, type ScenarioProblem } from '../scenario-schema.ts';

/**
 * Reads scenario files: a JSON file holding one scenario in the format of sim/scenario-schema.ts.
 * A scenario file is user input (S9: a bad file is exit 64), so an error names the file, the field
 * path and what was expected: `scenarios/<name>.json: workload.tasks[2].priority: expected an integer
 * from 0 to 30, got 31`.
 */
export class ScenarioFileError extends Error {
  override readonly name = 'ScenarioFileError';
  constructor(
    /** Path of the field at fault, e.g. `workload.tasks[2].priority`; empty for the whole file. */
    readonly field: string,
    /** What was expected, and what the file had. */
    readonly problem: string,
    /** The file, when the error came from reading one. */
    readonly file?: string,
    /** Problems found besides this one (the first is the one to fix first). */
    readonly more: readonly ScenarioProblem[] = [],
  ) {
    const others = more.length === 0 ? '' : ` (and ${more.length} more problem${more.length === 1 ? '' : 's'})`;
    super(`${[file, field].filter((part) => part !== undefined && part !== '').join(': ')}${file === undefined && field === '' ? '' : ': '}${problem}${others}`);
  }
}

/** `displayPath` is how the file is named in errors (the registry names its files `scenarios/<name>.json`). */
export function readScenarioFile(path: string, displayPath: string = path): ScenarioSpec {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ScenarioFileError('', `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`, displayPath);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ScenarioFileError('', `is not valid JSON (${(error as Error).message})`, displayPath);
  }
  const format = (value as { format?: unknown } | null)?.format;
  if (typeof format === 'string' && format.startsWith('leasehold-counterexample')) {
    throw new ScenarioFileError('', `is a counterexample written by leasehold check, not a scenario; replay it with: leasehold replay ${displayPath}`, displayPath);
  }
  return validateScenario(value, displayPath);
}

/** Checks a parsed scenario against the format; the first problem is thrown, naming its field (and the file, when given). */
export function validateScenario(value: unknown, file?: string): ScenarioSpec {
  const result = parseScenarioFile(value);
  if (result.ok) return result.spec;
  const [first, ...more] = result.problems;
  throw new ScenarioFileError(first?.field ?? '', first?.problem ?? 'is not a valid scenario', file, more);
}

/** Checks a fault plan (the one recorded in a counterexample file) as the field `path`, against a pool of workerCount workers. */
export function validatePlan(value: unknown, path: string, workerCount: number): void {
  const [first, ...more] = parseFaultPlan(value, path, workerCount);
  if (first !== undefined) throw new ScenarioFileError(first.field, first.problem, undefined, more);
}
