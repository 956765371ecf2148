/**
 * Writes reports/stryker/score.md from Stryker's JSON report (reports/stryker/mutation.json, the
 * mutation-testing-report schema): the mutation score of src/ in total and per file, computed the way
 * Stryker computes it, so the record in git says exactly what was measured and on which files.
 *
 *   npx tsx sim/stryker/score.ts [mutation.json] [score.md]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitState } from '../check/git.ts';

interface Mutant {
  status: string;
}

interface Report {
  files: Record<string, { mutants: Mutant[] }>;
}

export interface Tally {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  errors: number;
  ignored: number;
}

/** Stryker's definitions: detected = killed + timeout; score = detected / (detected + survived + no coverage). */
export function tally(mutants: readonly Mutant[]): Tally {
  const count = (...statuses: string[]) => mutants.filter((mutant) => statuses.includes(mutant.status)).length;
  return {
    killed: count('Killed'),
    timeout: count('Timeout'),
    survived: count('Survived'),
    noCoverage: count('NoCoverage'),
    errors: count('CompileError', 'RuntimeError'),
    ignored: count('Ignored'),
  };
}

export function score(t: Tally): number | undefined {
  const valid = t.killed + t.timeout + t.survived + t.noCoverage;
  return valid === 0 ? undefined : (100 * (t.killed + t.timeout)) / valid;
}

export function coveredScore(t: Tally): number | undefined {
  const covered = t.killed + t.timeout + t.survived;
  return covered === 0 ? undefined : (100 * (t.killed + t.timeout)) / covered;
}

export function scoreTable(report: Report, header: string): string {
  const percent = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(1)}%`);
  const row = (name: string, t: Tally) =>
    `| ${name} | ${percent(score(t))} | ${percent(coveredScore(t))} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} | ${t.errors} |`;
  const files = Object.entries(report.files).sort(([a], [b]) => (a < b ? -1 : 1));
  const all = tally(files.flatMap(([, file]) => file.mutants));
  return [
    header,
    '',
    '| file | score | covered score | killed | timeout | survived | no coverage | errors |',
    '|---|---|---|---|---|---|---|---|',
    row('**total**', all),
    ...files.map(([name, file]) => row(name, tally(file.mutants))),
    '',
    'score = (killed + timeout) / (killed + timeout + survived + no coverage); covered score leaves out the',
    'mutants no test reaches. Errors (mutants that do not compile or crash the runner) count in neither.',
    '',
  ].join('\n');
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isMain) {
  const input = process.argv[2] ?? 'reports/stryker/mutation.json';
  const output = process.argv[3] ?? 'reports/stryker/score.md';
  if (!existsSync(input)) {
    console.error(`stryker score: ${input} does not exist; run \`npm run stryker\` first`);
    process.exit(64);
  }
  const report = JSON.parse(readFileSync(input, 'utf8')) as Report;
  const git = gitState();
  const header = [
    '# Stryker mutation score of src/',
    '',
    `Measured at commit ${git.commit ?? 'unknown'}${git.dirty ? ' (with uncommitted changes)' : ''} with Stryker and stryker.config.json (the src unit suite and the model-based queue test, vitest.stryker.config.ts). \`npm run stryker\` mutates every file of src/; a run narrowed with \`-m\` mutates only the files listed here.`,
    `Files mutated (${Object.keys(report.files).length}): ${Object.keys(report.files).sort().join(', ')}.`,
  ].join('\n');
  writeFileSync(output, scoreTable(report, header));
  console.log(readFileSync(output, 'utf8'));
}
