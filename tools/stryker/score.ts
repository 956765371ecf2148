/**
 * Writes reports/stryker/score.md from Stryker's JSON report (reports/stryker/mutation.json, the
 * mutation-testing-report schema): the mutation score of src/ in total and per file, computed the way
 * Stryker computes it, so the record in git says exactly what was measured and on which files.
 *
 *   npx tsx tools/stryker/score.ts [mutation.json] [score.md]
 *   npx tsx tools/stryker/score.ts --batches [reports/stryker/batches] [score.md]
 *
 * The second form merges the per-group reports of `npm run stryker:batches` (see mergeBatches below).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitState, REPO_ROOT } from '../../sim/check/git.ts';

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

const percent = (value: number | undefined) => (value === undefined ? 'n/a' : `${value.toFixed(1)}%`);
const TABLE_HEAD = ['| file | score | covered score | killed | timeout | survived | no coverage | errors |', '|---|---|---|---|---|---|---|---|'];
const TABLE_FOOT = [
  'score = (killed + timeout) / (killed + timeout + survived + no coverage); covered score leaves out the',
  'mutants no test reaches. Errors (mutants that do not compile or crash the runner) count in neither.',
];
const row = (name: string, t: Tally) =>
  `| ${name} | ${percent(score(t))} | ${percent(coveredScore(t))} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} | ${t.errors} |`;

export function scoreTable(report: Report, header: string, totalLabel = '**total**'): string {
  const files = Object.entries(report.files).sort(([a], [b]) => (a < b ? -1 : 1));
  const all = tally(files.flatMap(([, file]) => file.mutants));
  return [header, '', ...TABLE_HEAD, row(totalLabel, all), ...files.map(([name, file]) => row(name, tally(file.mutants))), '', ...TABLE_FOOT, ''].join('\n');
}

/*
 * Batch mode (`npm run stryker:batches`, tools/stryker/batches.ts): src/ is measured one group of files at a
 * time, each group's Stryker report kept in reports/stryker/batches/<group>.json. The merge takes each
 * file's results from a report whose recorded source is the file as it is now; a file in no report
 * (not measured) or only in reports of an older text (stale) is named, never counted in the total.
 */

/** Where batches.ts records what it ran, next to Stryker's own fields in each saved group report. */
export const BATCH_META_KEY = 'leaseholdBatch';

export interface BatchMeta {
  group: string;
  /** The files the group mutated (those with at least one mutant when it ran). */
  files: string[];
  commit: string | null;
  /** Tracked files differed from the commit when the group ran (the recorded sources still say what was measured). */
  dirty: boolean;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  concurrency: number | null;
  /** The incremental file the run started from, if any (Stryker re-tests only mutants it cannot reuse). */
  seededFrom: string | null;
  forced: boolean;
}

export interface BatchReport {
  files: Record<string, { mutants: (Mutant & { coveredBy?: unknown })[]; source?: string }>;
  testFiles?: Record<string, { source?: string }>;
  [BATCH_META_KEY]?: BatchMeta;
}

export interface NamedReport {
  /** The report's name: its file name without `.json` (the group). */
  name: string;
  report: BatchReport;
}

export interface MergeInput {
  reports: readonly NamedReport[];
  /** The files Stryker mutates now (stryker.config.json `mutate`). */
  files: readonly string[];
  /** A file's text now (source or test file), undefined when it does not exist. */
  source: (file: string) => string | undefined;
  /** Mutants per file now (Stryker's instrumenter); a file with none has nothing to measure. Unknown: assumed to have some. */
  mutantCounts?: ReadonlyMap<string, number>;
}

export interface MeasuredFile {
  file: string;
  report: string;
  mutants: Mutant[];
}

export interface MergeResult {
  measured: MeasuredFile[];
  /** In batch reports, but every one of them recorded a different text than the file has now. */
  stale: { file: string; reports: string[]; mutants: number | undefined }[];
  /** In no batch report at all. */
  missing: { file: string; mutants: number | undefined }[];
  /** Mutated files in which Stryker places no mutant. */
  noMutants: string[];
  /** Files a report holds that Stryker no longer mutates (deleted or excluded); ignored. */
  outside: { file: string; report: string }[];
  /** Current in more than one report; the newest is used. */
  duplicates: { file: string; reports: string[]; used: string }[];
  /** Reports whose results are used although test files they ran have changed or gone since. */
  testsChanged: { report: string; files: string[] }[];
  /** Used reports in which Stryker recorded no per-test coverage (no mutant has `coveredBy`): every mutant ran the whole suite. */
  withoutCoverage: string[];
  total: Tally;
}

export function mergeBatches(input: MergeInput): MergeResult {
  const finished = (named: NamedReport) => named.report[BATCH_META_KEY]?.finishedAt ?? '';
  // Newest first, so a file current in two reports takes the later measurement.
  const reports = [...input.reports].sort((a, b) => (finished(a) === finished(b) ? (a.name < b.name ? -1 : 1) : finished(a) < finished(b) ? 1 : -1));
  const wanted = new Set(input.files);
  const result: MergeResult = { measured: [], stale: [], missing: [], noMutants: [], outside: [], duplicates: [], testsChanged: [], withoutCoverage: [], total: tally([]) };
  for (const file of [...input.files].sort()) {
    const now = input.source(file);
    const holding = reports.filter((named) => Object.hasOwn(named.report.files, file));
    const current = holding.filter((named) => now !== undefined && named.report.files[file]!.source === now);
    const count = input.mutantCounts?.get(file);
    if (current.length > 0) {
      const used = current[0]!;
      result.measured.push({ file, report: used.name, mutants: used.report.files[file]!.mutants });
      if (current.length > 1) result.duplicates.push({ file, reports: current.map((named) => named.name), used: used.name });
    } else if (count === 0) {
      result.noMutants.push(file);
    } else if (holding.length > 0) {
      result.stale.push({ file, reports: holding.map((named) => named.name), mutants: count });
    } else {
      result.missing.push({ file, mutants: count });
    }
  }
  for (const named of [...input.reports].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    for (const file of Object.keys(named.report.files).sort()) {
      if (!wanted.has(file)) result.outside.push({ file, report: named.name });
    }
  }
  const used = new Set(result.measured.map((measured) => measured.report));
  for (const named of [...input.reports].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!used.has(named.name)) continue;
    const changed = Object.entries(named.report.testFiles ?? {})
      .filter(([file, test]) => test.source !== undefined && input.source(file) !== test.source)
      .map(([file]) => file)
      .sort();
    if (changed.length > 0) result.testsChanged.push({ report: named.name, files: changed });
    const mutantsOf = Object.values(named.report.files).flatMap((file) => file.mutants);
    if (mutantsOf.length > 0 && mutantsOf.every((mutant) => mutant.coveredBy === undefined)) result.withoutCoverage.push(named.name);
  }
  result.total = tally(result.measured.flatMap((measured) => measured.mutants));
  return result;
}

export interface MergeContext {
  /** Commit and state of the checkout the merge ran in. */
  commit: string | undefined;
  dirty: boolean;
  /** Where the reports were read from, for the text. */
  dir: string;
  reports: readonly NamedReport[];
}

/** score.md for merged batch reports: what is not measured or stale comes first, then the table of what is. */
export function mergedScoreText(merge: MergeResult, context: MergeContext): string {
  const n = (value: number | undefined) => (value === undefined ? '?' : String(value));
  const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;
  const sum = (values: (number | undefined)[]) => (values.some((value) => value === undefined) ? undefined : values.reduce<number>((a, b) => a + (b ?? 0), 0));
  const meta = (name: string) => context.reports.find((named) => named.name === name)?.report[BATCH_META_KEY];
  const commitOf = (commit: string | null | undefined) => commit ?? 'unknown';
  const lines: string[] = [
    '# Stryker mutation score of src/ (merged batch reports)',
    '',
    `Merged at commit ${context.commit ?? 'unknown'}${context.dirty ? ' (with uncommitted changes)' : ''} from ${plural(context.reports.length, 'batch report', 'batch reports')} in ${context.dir} (\`npm run stryker:batches\`, tools/stryker/batches.ts; Stryker with stryker.config.json and the suite in vitest.stryker.config.ts). Each file's results come from a report that recorded exactly the file's current text; the total counts only those files.`,
    '',
  ];
  const unmeasuredMutants = sum([...merge.missing.map((file) => file.mutants), ...merge.stale.map((file) => file.mutants)]);
  if (merge.missing.length > 0) {
    lines.push(
      `**NOT MEASURED: ${plural(merge.missing.length, 'file', 'files')} of src (${n(sum(merge.missing.map((file) => file.mutants)))} mutants) ${merge.missing.length === 1 ? 'is' : 'are'} in no batch report and left out of the total:**`,
      '',
      ...merge.missing.map((file) => `- ${file.file} (${n(file.mutants)} mutants)`),
      '',
    );
  }
  if (merge.stale.length > 0) {
    lines.push(
      `**STALE: ${plural(merge.stale.length, 'file', 'files')} of src (${n(sum(merge.stale.map((file) => file.mutants)))} mutants) changed since ${merge.stale.length === 1 ? 'its' : 'their'} batch report and ${merge.stale.length === 1 ? 'is' : 'are'} left out of the total:**`,
      '',
      ...merge.stale.map((file) => `- ${file.file} (${n(file.mutants)} mutants now; report ${file.reports.map((name) => `${name}, measured at ${commitOf(meta(name)?.commit)}`).join('; ')})`),
      '',
    );
  }
  const filesWithMutants = merge.measured.length + merge.stale.length + merge.missing.length;
  const measuredMutants = merge.measured.reduce((total, file) => total + file.mutants.length, 0);
  if (merge.missing.length === 0 && merge.stale.length === 0) {
    lines.push(`All ${filesWithMutants} files of src with mutants are measured against their current text (${measuredMutants} mutants).`, '');
  } else {
    lines.push(
      `Measured: ${merge.measured.length} of ${filesWithMutants} files of src with mutants; ${measuredMutants} mutants measured, ${n(unmeasuredMutants)} not (not measured or stale). The total below is of the measured files only.`,
      '',
    );
  }
  lines.push(...TABLE_HEAD.map((line, index) => (index === 0 ? `${line} report |` : `${line}---|`)));
  lines.push(`${row(merge.missing.length + merge.stale.length > 0 ? '**total (measured files only)**' : '**total**', merge.total)}  |`);
  for (const file of merge.measured) lines.push(`${row(file.file, tally(file.mutants))} ${file.report} |`);
  lines.push('', ...TABLE_FOOT, '');
  lines.push('## Batch reports', '', '| report | files | mutants | commit | finished | duration | started from |', '|---|---|---|---|---|---|---|');
  for (const named of [...context.reports].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const info = named.report[BATCH_META_KEY];
    const mutants = Object.values(named.report.files).reduce((total, file) => total + file.mutants.length, 0);
    const duration = info ? `${Math.round(info.durationMs / 1000)} s` : '?';
    const seeded = info ? (info.forced ? 'nothing (--force)' : (info.seededFrom ?? 'nothing')) : '?';
    lines.push(
      `| ${named.name} | ${Object.keys(named.report.files).length} | ${mutants} | ${info ? `${commitOf(info.commit)}${info.dirty ? ' (dirty)' : ''}` : 'unknown'} | ${info?.finishedAt ?? '?'} | ${duration} | ${seeded} |`,
    );
  }
  lines.push('');
  if (merge.testsChanged.length > 0) {
    lines.push(
      'Test files changed or removed since these reports ran (their results are kept; `npx tsx tools/stryker/batches.ts --only GROUP --force` re-measures a group):',
      '',
      ...merge.testsChanged.map((entry) => `- ${entry.report}: ${entry.files.join(', ')}`),
      '',
    );
  }
  if (merge.withoutCoverage.length > 0) {
    lines.push(
      `No per-test coverage was recorded in ${merge.withoutCoverage.length === context.reports.length ? 'any report' : merge.withoutCoverage.join(', ')} (no mutant has \`coveredBy\`; Stryker's vitest runner before 9.6.1 with vitest 4, stryker-js issue 5928): every mutant ran the whole suite, and a mutant no test reaches counts as survived, not "no coverage", so the two scores are equal.`,
      '',
    );
  }
  if (merge.duplicates.length > 0) {
    lines.push('Files current in more than one report (the newest is used):', '', ...merge.duplicates.map((entry) => `- ${entry.file}: ${entry.reports.join(', ')}; used ${entry.used}`), '');
  }
  if (merge.outside.length > 0) {
    lines.push('Files in a report that Stryker no longer mutates (ignored):', '', ...merge.outside.map((entry) => `- ${entry.file} (${entry.report})`), '');
  }
  if (merge.noMutants.length > 0) lines.push(`Files of src without mutants (nothing to measure): ${merge.noMutants.join(', ')}.`, '');
  return lines.join('\n');
}

/** Reads every <name>.json in dir as a batch report. */
export function readBatchReports(dir: string): NamedReport[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({ name: name.slice(0, -'.json'.length), report: JSON.parse(readFileSync(join(dir, name), 'utf8')) as BatchReport }));
}

export const BATCH_DIR = 'reports/stryker/batches';

/**
 * Merges the batch reports in dir (relative to the repository) into output; returns the merge. The mutant
 * counts, if not given, come from Stryker's instrumenter for the files not measured current.
 */
export async function writeBatchScore(options: { dir?: string; output?: string; mutantCounts?: ReadonlyMap<string, number> } = {}): Promise<MergeResult> {
  const { countMutants, currentSource, mutatedFiles } = await import('./files.ts');
  const dir = options.dir ?? BATCH_DIR;
  const output = options.output ?? 'reports/stryker/score.md';
  const reports = readBatchReports(resolve(REPO_ROOT, dir));
  const files = mutatedFiles();
  const source = (file: string) => currentSource(file);
  let mutantCounts = options.mutantCounts;
  if (mutantCounts === undefined) {
    const first = mergeBatches({ reports, files, source });
    const measured = new Set(first.measured.map((file) => file.file));
    mutantCounts = await countMutants(files.filter((file) => !measured.has(file)));
  }
  const merge = mergeBatches({ reports, files, source, mutantCounts });
  const git = gitState();
  writeFileSync(resolve(REPO_ROOT, output), mergedScoreText(merge, { commit: git.commit, dirty: git.dirty, dir, reports }));
  return merge;
}

/** One line per problem, for a terminal: what the merged score leaves out. */
export function mergeWarnings(merge: MergeResult): string[] {
  return [
    ...merge.missing.map((file) => `NOT MEASURED: ${file.file} (${file.mutants ?? '?'} mutants) is in no batch report`),
    ...merge.stale.map((file) => `STALE: ${file.file} changed since its batch report (${file.reports.join(', ')})`),
  ];
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isMain && process.argv[2] === '--batches') {
  const dir = process.argv[3] ?? BATCH_DIR;
  const output = process.argv[4] ?? 'reports/stryker/score.md';
  const merge = await writeBatchScore({ dir, output });
  console.log(readFileSync(resolve(REPO_ROOT, output), 'utf8'));
  for (const warning of mergeWarnings(merge)) console.error(`stryker score: ${warning}`);
} else if (isMain) {
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
    `Measured at commit ${git.commit ?? 'unknown'}${git.dirty ? ' (with uncommitted changes)' : ''} with Stryker, stryker.config.json and the suite in vitest.stryker.config.ts. \`npm run stryker\` mutates every file of src/; a run narrowed with \`-m\` mutates only the files listed here.`,
    `Files mutated (${Object.keys(report.files).length}): ${Object.keys(report.files).sort().join(', ')}.`,
  ].join('\n');
  writeFileSync(output, scoreTable(report, header));
  console.log(readFileSync(output, 'utf8'));
}
