/**
 * Stryker over src/ in resumable batches. The whole run is ~2,400 mutants, hours on a 2-core machine,
 * and Stryker writes nothing if it is stopped before the end; so src/ is split into groups of files
 * (GROUPS, 20-250 mutants each) and Stryker runs on one group at a time. Each finished group's report
 * (Stryker's incremental file: the mutation-testing-report JSON with every file's source and the test
 * files it ran) is saved as reports/stryker/batches/<group>.json (generated output, kept out of git like
 * the merged score.md: a fresh clone measures every group). A group whose saved
 * report recorded exactly the current text of all its files is skipped, so running again resumes where
 * the last run stopped; a group whose files changed starts from its saved report as Stryker's
 * incremental file, so only changed mutants are re-tested (unless the tests changed too: see
 * incrementalSeed). Nothing is borrowed from reports/stryker/incremental.json of a whole-src run. At the
 * end the saved reports are merged into reports/stryker/score.md (score.ts), naming every file not
 * measured or stale.
 *
 *   npx tsx tools/stryker/batches.ts [--only GROUP[,GROUP...]] [--list] [--concurrency N] [--force]
 *
 *   --list          print the groups, their files, mutant counts and whether their report is current; run nothing
 *   --only          run only these groups (others are left as they are; the merge still covers all)
 *   --concurrency   Stryker's --concurrency (default: stryker.config.json's)
 *   --force         re-measure the selected groups from scratch, even when current (Stryker --force)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gitState, REPO_ROOT } from '../../sim/check/git.ts';
import { countMutants, currentSource, mutatedFiles, STRYKER_CONFIG } from './files.ts';
import { BATCH_DIR, BATCH_META_KEY, mergeWarnings, score, tally, writeBatchScore, type BatchMeta, type BatchReport } from './score.ts';
import { isoTime, wallClockEpochMs } from '../../sim/check/wall-clock.ts';

/**
 * The groups, by directory, a large file alone. A mutated file listed in no group runs in a group of
 * its own (named after its path); a listed file that has no mutants or is no longer mutated is dropped.
 * Keep names stable: a renamed group loses its saved report (score.ts still merges the old file, but
 * batches.ts would re-measure its files under the new name).
 */
export const GROUPS: readonly { name: string; files: readonly string[] }[] = [
  { name: 'root', files: ['src/canonical-json.ts', 'src/index.ts', 'src/ports.ts', 'src/adapters/random.ts', 'src/adapters/clock.ts', 'src/adapters/waiter.ts'] },
  { name: 'store', files: ['src/store/migrations.ts', 'src/store/statements.ts', 'src/store/sqlite-store.ts', 'src/store/store.ts'] },
  { name: 'runs', files: ['src/runs/checkpoints.ts', 'src/runs/effects.ts', 'src/runs/interrupt.ts', 'src/runs/reconciler.ts'] },
  { name: 'worker-run', files: ['src/worker/run.ts'] },
  { name: 'worker', files: ['src/worker/fingerprint.ts', 'src/worker/lease-keeper.ts', 'src/worker/resume.ts', 'src/worker/stop-run.ts', 'src/worker/types.ts', 'src/worker/worker.ts'] },
  { name: 'queue-scoring', files: ['src/queue/scoring.ts'] },
  { name: 'queue-claim', files: ['src/queue/claim.ts'] },
  { name: 'queue-operator', files: ['src/queue/operator.ts', 'src/queue/states.ts', 'src/queue/transition.ts', 'src/queue/run-end.ts'] },
  { name: 'queue-holder-writes', files: ['src/queue/holder-writes.ts'] },
  { name: 'queue-enqueue-input', files: ['src/queue/enqueue-input.ts'] },
  { name: 'queue-work-queue', files: ['src/work-queue.ts', 'src/queue/types.ts'] },
  { name: 'queue-context', files: ['src/queue/context.ts', 'src/queue/errors.ts'] },
  { name: 'queue-enqueue', files: ['src/queue/enqueue.ts', 'src/queue/incidents.ts'] },
  { name: 'queue-config', files: ['src/queue/config.ts', 'src/queue/views.ts'] },
];

/** Where Stryker reads and writes a running group's incremental file (git-ignored); saved only once Stryker succeeds. */
const WORK_DIR = 'reports/stryker/work';

export interface Group {
  name: string;
  /** Files with at least one mutant, in order. */
  files: string[];
  mutants: number;
}

export interface Plan {
  groups: Group[];
  /** Mutated files without a single mutant: nothing to run. */
  noMutants: string[];
  /** Files GROUPS names that Stryker does not mutate (deleted or excluded). */
  unknown: string[];
}

/** The groups to run for the files Stryker mutates now and their mutant counts. */
export function planGroups(mutated: readonly string[], counts: ReadonlyMap<string, number>, groups: typeof GROUPS = GROUPS): Plan {
  const mutatedSet = new Set(mutated);
  const listed = new Set(groups.flatMap((group) => group.files));
  const has = (file: string) => (counts.get(file) ?? 1) > 0;
  const plan: Plan = {
    groups: [],
    noMutants: mutated.filter((file) => !has(file)),
    unknown: [...listed].filter((file) => !mutatedSet.has(file)).sort(),
  };
  const add = (name: string, files: string[]) => {
    if (files.length > 0) plan.groups.push({ name, files, mutants: files.reduce((total, file) => total + (counts.get(file) ?? 0), 0) });
  };
  for (const group of groups) add(group.name, group.files.filter((file) => mutatedSet.has(file) && has(file)));
  for (const file of mutated) {
    if (!listed.has(file) && has(file)) add(`auto-${file.replace(/^src\//, '').replace(/\.ts$/, '').replace(/[^a-zA-Z0-9]+/g, '-')}`, [file]);
  }
  return plan;
}

export type GroupStatus = { kind: 'current'; meta: BatchMeta | undefined } | { kind: 'none' } | { kind: 'changed'; files: string[]; meta: BatchMeta | undefined };

/** Whether the group's saved report recorded exactly the current text of each of its files. */
export function groupStatus(group: Group, report: BatchReport | undefined, source: (file: string) => string | undefined): GroupStatus {
  if (report === undefined) return { kind: 'none' };
  const changed = group.files.filter((file) => {
    const recorded = Object.hasOwn(report.files, file) ? report.files[file]!.source : undefined;
    return recorded === undefined || recorded !== source(file);
  });
  const meta = report[BATCH_META_KEY];
  return changed.length === 0 ? { kind: 'current', meta } : { kind: 'changed', files: changed, meta };
}

/**
 * The incremental file a changed group starts from: its saved report, holding only the group's files
 * (Stryker would carry any other file's old results into the new report). Refused when a test file the
 * report ran has changed or gone since: without per-test coverage (Stryker's vitest runner before 9.6.1 records
 * none with vitest 4) Stryker reuses every unchanged mutant's result whatever the tests did, so the old results would
 * stand for tests that no longer exist.
 */
export function incrementalSeed(group: Group, saved: BatchReport, source: (file: string) => string | undefined): { report?: BatchReport; refused?: string } {
  const changedTests = Object.entries(saved.testFiles ?? {})
    .filter(([file, test]) => test.source === undefined || source(file) !== test.source)
    .map(([file]) => file);
  if (changedTests.length > 0) return { refused: `test files changed or removed since it ran: ${changedTests.sort().join(', ')}` };
  const files = Object.fromEntries(Object.entries(saved.files).filter(([file]) => group.files.includes(file)));
  const { [BATCH_META_KEY]: _meta, ...stryker } = saved;
  return { report: { ...stryker, files } };
}

function reportPath(group: string): string {
  return join(REPO_ROOT, BATCH_DIR, `${group}.json`);
}

function readReport(path: string): BatchReport | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as BatchReport;
  } catch (error) {
    console.warn(`stryker batches: ${path} is not valid JSON (${(error as Error).message}); treating the group as unmeasured`);
    return undefined;
  }
}

function clock(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${Math.floor(seconds / 3600)}:${pad(Math.floor(seconds / 60) % 60)}:${pad(seconds % 60)}`;
}

interface Options {
  only: string[] | undefined;
  list: boolean;
  concurrency: number | undefined;
  force: boolean;
}

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { only: undefined, list: false, concurrency: undefined, force: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const next = argv[++i];
      if (next === undefined) usage(`${arg} needs a value`);
      return next;
    };
    if (arg === '--list') options.list = true;
    else if (arg === '--force') options.force = true;
    else if (arg === '--only') options.only = [...(options.only ?? []), ...value().split(',').filter(Boolean)];
    else if (arg.startsWith('--only=')) options.only = [...(options.only ?? []), ...arg.slice('--only='.length).split(',').filter(Boolean)];
    else if (arg === '--concurrency' || arg === '-c') options.concurrency = positive(value());
    else if (arg.startsWith('--concurrency=')) options.concurrency = positive(arg.slice('--concurrency='.length));
    else usage(`unknown argument ${arg}`);
  }
  return options;
}

function positive(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 1) usage(`--concurrency must be a positive integer, got ${text}`);
  return value;
}

function usage(message: string): never {
  console.error(`stryker batches: ${message}\nusage: npx tsx tools/stryker/batches.ts [--only GROUP[,GROUP...]] [--list] [--concurrency N] [--force]`);
  process.exit(64);
}

let child: ReturnType<typeof spawn> | undefined;
let interrupted: NodeJS.Signals | undefined;

/** Runs Stryker on the group's files with the given incremental file; resolves to its exit code. */
function runStryker(group: Group, incrementalFile: string, options: Options): Promise<number> {
  const bin = join(REPO_ROOT, 'node_modules/@stryker-mutator/core/bin/stryker.js');
  const args = [
    bin,
    'run',
    STRYKER_CONFIG,
    '--mutate',
    group.files.join(','),
    '--incremental',
    '--incrementalFile',
    incrementalFile,
    // No json/html reporter: the incremental file is the report, and reports/stryker/mutation.json of a whole run stays as it was.
    '--reporters',
    `clear-text,${process.stdout.isTTY ? 'progress' : 'progress-append-only'}`,
    ...(options.concurrency === undefined ? [] : ['--concurrency', String(options.concurrency)]),
    ...(options.force ? ['--force'] : []),
  ];
  console.log(`stryker batches: node ${args.map((arg) => (arg === bin ? 'node_modules/.bin/stryker' : arg)).join(' ')}`);
  return new Promise((resolvePromise, reject) => {
    child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      child = undefined;
      resolvePromise(code ?? (signal ? 128 : 1));
    });
  });
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const started = wallClockEpochMs();
  const mutated = mutatedFiles();
  const counts = await countMutants(mutated);
  const plan = planGroups(mutated, counts);
  const source = (file: string) => currentSource(file);
  const total = plan.groups.reduce((sum, group) => sum + group.mutants, 0);
  for (const file of plan.unknown) console.warn(`stryker batches: GROUPS lists ${file}, which Stryker does not mutate (deleted or excluded?); dropped`);

  if (options.list) {
    console.log(`${plan.groups.length} groups, ${total} mutants in ${mutated.length - plan.noMutants.length} files (stryker.config.json "mutate"):`);
    for (const group of plan.groups) {
      const status = groupStatus(group, readReport(reportPath(group.name)), source);
      const state =
        status.kind === 'current'
          ? `current (measured at ${status.meta?.commit?.slice(0, 10) ?? '?'})`
          : status.kind === 'none'
            ? 'not measured'
            : `STALE: ${status.files.join(', ')} changed`;
      console.log(`  ${group.name.padEnd(22)} ${String(group.mutants).padStart(4)} mutants  ${state}`);
      for (const file of group.files) console.log(`      ${file} (${counts.get(file)})`);
    }
    if (plan.noMutants.length > 0) console.log(`no mutants (not run): ${plan.noMutants.join(', ')}`);
    return 0;
  }

  let selected = plan.groups;
  if (options.only !== undefined) {
    const names = new Set(plan.groups.map((group) => group.name));
    const unknown = options.only.filter((name) => !names.has(name));
    if (unknown.length > 0) usage(`no group named ${unknown.join(', ')}; groups: ${[...names].join(', ')}`);
    selected = plan.groups.filter((group) => options.only!.includes(group.name));
  }

  mkdirSync(join(REPO_ROOT, BATCH_DIR), { recursive: true });
  mkdirSync(join(REPO_ROOT, WORK_DIR), { recursive: true });
  const failed: string[] = [];
  let ran = 0;
  let skipped = 0;
  const remainingMutants = () => selected.filter((group) => groupStatus(group, readReport(reportPath(group.name)), source).kind !== 'current').reduce((sum, group) => sum + group.mutants, 0);
  console.log(`stryker batches: ${selected.length} of ${plan.groups.length} groups selected, ${options.force ? 'all re-measured (--force)' : `${remainingMutants()} mutants in groups without a current report`}`);

  for (const [index, group] of selected.entries()) {
    if (interrupted) break;
    const label = `group ${index + 1}/${selected.length} ${group.name} (${group.files.length} ${group.files.length === 1 ? 'file' : 'files'}, ${group.mutants} mutants; elapsed ${clock(wallClockEpochMs() - started)})`;
    const saved = reportPath(group.name);
    const status = groupStatus(group, readReport(saved), source);
    if (status.kind === 'current' && !options.force) {
      skipped++;
      console.log(`\n=== ${label}: SKIPPED, ${BATCH_DIR}/${group.name}.json already matches the current text of ${group.files.join(', ')} (measured at ${status.meta?.commit?.slice(0, 10) ?? '?'}, ${status.meta?.finishedAt ?? '?'})`);
      continue;
    }
    console.log(`\n=== ${label}: RUNNING ${group.files.join(', ')}`);
    if (status.kind === 'changed') console.log(`    changed since the saved report: ${status.files.join(', ')}`);

    // Stryker reads and rewrites the incremental file; it works on a copy so a killed run leaves the saved report intact.
    const work = join(WORK_DIR, `${group.name}.incremental.json`);
    const previous = status.kind === 'none' || options.force ? undefined : readReport(saved);
    let seed = previous === undefined ? undefined : incrementalSeed(group, previous, source);
    if (seed?.refused) console.log(`    incremental: not starting from the saved report: ${seed.refused}; every mutant is re-tested`);
    if (seed?.refused) seed = undefined;
    const groupStarted = wallClockEpochMs();
    const startedAt = isoTime(groupStarted);
    const git = gitState();
    let report: BatchReport | undefined;
    let code = 0;
    for (;;) {
      rmSync(join(REPO_ROOT, work), { force: true });
      if (seed?.report !== undefined) {
        writeFileSync(join(REPO_ROOT, work), JSON.stringify(seed.report));
        console.log(`    incremental: starting from ${BATCH_DIR}/${group.name}.json; Stryker re-tests only the mutants it cannot reuse`);
      }
      code = await runStryker(group, work, options);
      report = code === 0 && !interrupted ? readReport(join(REPO_ROOT, work)) : undefined;
      if (report === undefined || seed?.report === undefined) break;
      // Test files the seed never saw may kill mutants whose old results Stryker just reused (it reuses
      // everything it can when it has no per-test coverage): measure again from scratch.
      const added = Object.keys(report.testFiles ?? {}).filter((file) => !Object.hasOwn(seed!.report!.testFiles ?? {}, file));
      if (added.length === 0) break;
      console.log(`    incremental: test files ran that the saved report does not know (${added.join(', ')}); re-measuring every mutant of the group`);
      seed = undefined;
    }
    const took = wallClockEpochMs() - groupStarted;
    const seededFrom = seed?.report === undefined ? null : `${BATCH_DIR}/${group.name}.json`;
    if (interrupted) {
      console.error(`\n=== ${group.name}: interrupted by ${interrupted} after ${clock(took)}; nothing saved for this group`);
      break;
    }
    if (report === undefined) {
      failed.push(group.name);
      console.error(`\n=== ${group.name}: FAILED (Stryker exit code ${code}${code === 0 ? ', but it wrote no report' : ''}) after ${clock(took)}; nothing saved for this group`);
      continue;
    }
    // Stryker carries over old results of files outside --mutate; a group's report holds its own files only.
    const foreign = Object.keys(report.files).filter((file) => !group.files.includes(file));
    if (foreign.length > 0) {
      console.warn(`    warning: the report also held ${foreign.join(', ')}, not in this group; dropped`);
      report = { ...report, files: Object.fromEntries(Object.entries(report.files).filter(([file]) => group.files.includes(file))) };
    }
    const absent = group.files.filter((file) => !Object.hasOwn(report.files, file));
    if (absent.length > 0) console.warn(`    warning: Stryker reported no mutant of ${absent.join(', ')} (expected ${absent.map((file) => counts.get(file)).join(', ')})`);
    const edited = group.files.filter((file) => Object.hasOwn(report.files, file) && report.files[file]!.source !== source(file));
    if (edited.length > 0) console.warn(`    warning: ${edited.join(', ')} changed while Stryker ran; the report records the text it measured and will show as stale`);
    const meta: BatchMeta = {
      group: group.name,
      files: group.files,
      commit: git.commit ?? null,
      dirty: git.dirty,
      startedAt,
      finishedAt: isoTime(wallClockEpochMs()),
      durationMs: took,
      concurrency: options.concurrency ?? null,
      seededFrom,
      forced: options.force,
    };
    const temporary = `${saved}.partial`;
    writeFileSync(temporary, `${JSON.stringify({ ...report, [BATCH_META_KEY]: meta }, null, 2)}\n`);
    renameSync(temporary, saved);
    rmSync(join(REPO_ROOT, work), { force: true });
    ran++;
    const t = tally(Object.values(report.files).flatMap((file) => file.mutants));
    const value = score(t);
    console.log(
      `\n=== ${group.name}: DONE in ${clock(took)}: score ${value === undefined ? 'n/a' : `${value.toFixed(1)}%`} (${t.killed} killed, ${t.timeout} timeout, ${t.survived} survived, ${t.noCoverage} no coverage, ${t.errors} errors); saved ${BATCH_DIR}/${group.name}.json`,
    );
  }

  const merge = await writeBatchScore({ mutantCounts: counts });
  const merged = score(merge.total);
  console.log(
    `\nstryker batches: ${ran} run, ${skipped} skipped, ${failed.length} failed${interrupted ? ', interrupted' : ''}; elapsed ${clock(wallClockEpochMs() - started)}. Merged score of the measured files: ${merged === undefined ? 'n/a' : `${merged.toFixed(1)}%`} (${merge.measured.length} files) -> reports/stryker/score.md`,
  );
  for (const warning of mergeWarnings(merge)) console.log(`stryker batches: ${warning}`);
  if (interrupted) return interrupted === 'SIGINT' ? 130 : 143;
  if (failed.length > 0) {
    console.error(`stryker batches: Stryker failed for ${failed.join(', ')}`);
    return 1;
  }
  return 0;
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === resolve(process.argv[1]);
if (isMain) {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      interrupted = signal;
      // Stryker cleans up its own test runners; the loop stops once it has exited.
      if (child !== undefined && !child.killed) child.kill(signal);
    });
  }
  process.exitCode = await main();
}
