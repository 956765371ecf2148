/**
 * Which branches of src/ the gate reaches: `leasehold check` run compiled (tsc, with source maps) under
 * NODE_V8_COVERAGE, its threads' coverage converted with @vitest/coverage-v8's engine and remapped to
 * the TypeScript. Writes reports/coverage/gate.md (per file, and every branch path that never ran) and
 * reports/coverage/gate-summary.json (the totals the floor in .ci/coverage-floor.json is checked against).
 *
 *   npx tsx tools/coverage/gate.ts [--seeds N] [--pglite-seeds N] [--out DIR] [--jobs N] [-- MORE CHECK FLAGS]
 *
 * --pglite-seeds N also runs the catalogue on the PostgreSQL store's SQL in PGlite (`check --store pglite`,
 * N seeds a scenario) into the same coverage, and the worse of the two verdicts is the gate's.
 *
 * Flags after `--` go to `leasehold check` as they are (CI passes --junit); the tool exits with the
 * check's own exit code, so a failing gate still fails.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gitState } from '../../sim/check/git.ts';
import { rootSeed } from '../../sim/check/seeds.ts';
import { catalogueConfigCoverage, renderConfigCoverage } from './config-seeds.ts';
import { addTotals, coverageOfCompiledSrc, emptyTotals, percent, totalsOf, unreachedBranches, type FileCoverageData, type Totals, type UnreachedBranch } from './istanbul.ts';
import { countByStatus, judgeUnreached, readReasons, renderUnreached, unreachedOfFiles, type Judged } from './unreached.ts';

const REPO = resolve(import.meta.dirname, '..', '..');
/** The human-curated reasons why each unreached piece of src/ stays unreached (tools/coverage/unreached.ts). */
export const REASONS_FILE = join(REPO, 'tools/coverage/unreached.json');
const USAGE = 'usage: npx tsx tools/coverage/gate.ts [--seeds N] [--pglite-seeds N] [--out DIR] [--jobs N] [-- MORE CHECK FLAGS]\n       npx tsx tools/coverage/gate.ts --render [--out DIR]   (the reports again from DIR/coverage-final.json, after editing tools/coverage/unreached.json)';

export interface GateCoverage {
  seeds: number;
  /** The exit code of the check that ran (S9): the coverage is taken whatever its verdict, and passed on. */
  checkStatus: number;
  totals: Totals;
  files: { file: string; totals: Totals; unreached: UnreachedBranch[] }[];
  /** Every unreached piece of src/ with its reason (or unexplained), and reasons no longer used. */
  judged: Judged[];
  stale: string[];
}

function main(): void {
  let values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ allowPositionals: true, options: { render: { type: 'boolean' }, seeds: { type: 'string', default: '100' }, 'pglite-seeds': { type: 'string', default: '0' }, out: { type: 'string', default: 'reports/coverage' }, jobs: { type: 'string' }, help: { type: 'boolean' } } }));
  } catch (error) {
    process.stderr.write(`gate coverage: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(64);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\nRuns leasehold check compiled under V8 coverage and reports which branches of src/ it reached.\n`);
    return;
  }
  if (values.render === true) {
    const coverage = rerender(resolve(REPO, values.out));
    process.stdout.write(`${unreachedLine(coverage.judged, coverage.stale)}\n`);
    return;
  }
  const seeds = Number(values.seeds);
  if (!Number.isSafeInteger(seeds) || seeds < 1) {
    process.stderr.write(`gate coverage: --seeds must be a positive integer, got ${values.seeds}\n${USAGE}\n`);
    process.exit(64);
  }
  if (positionals.length > 0 && !process.argv.includes('--')) {
    process.stderr.write(`gate coverage: unexpected argument ${positionals[0]} (flags for leasehold check go after --)\n${USAGE}\n`);
    process.exit(64);
  }
  const pgliteSeeds = Number(values['pglite-seeds']);
  if (!Number.isSafeInteger(pgliteSeeds) || pgliteSeeds < 0) {
    process.stderr.write(`gate coverage: --pglite-seeds must be a whole number, got ${values['pglite-seeds']}\n${USAGE}\n`);
    process.exit(64);
  }
  void measure(seeds, resolve(REPO, values.out), values.jobs, positionals, pgliteSeeds).then(
    (coverage) => {
      process.stdout.write(`gate coverage of src/ over ${seeds} seeds: lines ${percent(coverage.totals.lines)}%, branches ${percent(coverage.totals.branches)}% (${coverage.totals.branches.covered}/${coverage.totals.branches.total})\n`);
      process.stdout.write(`${unreachedLine(coverage.judged, coverage.stale)}\n`);
      // A failing gate stays a failure: this tool measures, it does not pardon.
      process.exitCode = coverage.checkStatus;
    },
    (error: unknown) => {
      process.stderr.write(`gate coverage: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(3);
    },
  );
}

export async function measure(seeds: number, out: string, jobs?: string, checkFlags: readonly string[] = [], pgliteSeeds = 0): Promise<GateCoverage> {
  const build = join(out, 'build');
  const v8 = join(out, 'v8');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(v8, { recursive: true });
  process.stderr.write(`::: compiling src/ and sim/ with source maps into ${build}\n`);
  execFileSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', join(REPO, 'tsconfig.build.json'), '--outDir', build, '--sourceMap', '--declaration', 'false'], { stdio: 'inherit' });
  copyFileSync(join(REPO, 'sim/check/worker-bootstrap.mjs'), join(build, 'sim/check/worker-bootstrap.mjs'));
  process.stderr.write(`::: leasehold check --seeds ${seeds} under NODE_V8_COVERAGE\n`);
  const args = [join(build, 'sim/cli/main.js'), 'check', '--seeds', String(seeds), '--out', join(out, 'check'), ...(jobs === undefined ? [] : ['--jobs', jobs]), ...checkFlags];
  const run = spawnSync(process.execPath, args, { cwd: REPO, stdio: 'inherit', env: { ...process.env, NODE_V8_COVERAGE: v8 } });
  // The gate's verdict is not this tool's business, but a crashed or bad-usage run covers nothing useful.
  if (run.status === 3 || run.status === 64 || run.status === null) throw new Error(`leasehold check ended with ${run.status ?? run.signal}; no coverage taken`);
  let status = run.status;
  if (pgliteSeeds > 0) {
    // P6: the same catalogue on the PostgreSQL store's own SQL (PGlite), a few seeds each, into the same
    // coverage: the gate judges src/ over both stores, as the simulation runs over both.
    process.stderr.write(`::: leasehold check --store pglite --seeds ${pgliteSeeds} under NODE_V8_COVERAGE\n`);
    const pglite = spawnSync(process.execPath, [join(build, 'sim/cli/main.js'), 'check', '--store', 'pglite', '--seeds', String(pgliteSeeds), '--out', join(out, 'check-pglite'), ...(jobs === undefined ? [] : ['--jobs', jobs])], {
      cwd: REPO,
      stdio: 'inherit',
      env: { ...process.env, NODE_V8_COVERAGE: v8 },
    });
    if (pglite.status === 64 || pglite.status === null) throw new Error(`leasehold check --store pglite ended with ${pglite.status ?? pglite.signal}; no coverage taken`);
    // The worse verdict of the two is the gate's: a failure on either store fails it.
    if (pglite.status !== 0 && (status === 0 || pglite.status < status)) status = pglite.status;
  }
  process.stderr.write('::: converting V8 coverage\n');
  const files = await coverageOfCompiledSrc(v8, build, REPO);
  // A run that never loaded src/ (e.g. --out outside the repository, where the build finds no
  // node_modules) measured nothing: 0 of 0 branches is not 100%.
  if (files.size === 0) throw new Error(`leasehold check ended with ${status} and loaded no file of src/; no coverage taken`);
  // The converted per-file maps (Istanbul's coverage-final.json shape), so the report can be rendered
  // again (tools/coverage/unreached.ts --render) without running the gate again.
  writeFileSync(join(out, 'coverage-final.json'), `${JSON.stringify(Object.fromEntries(files))}\n`);
  const coverage = summarise(seeds, status, files);
  writeReports(out, coverage, commit(), productFiles().filter((file) => !files.has(file)));
  rmSync(v8, { recursive: true, force: true });
  return coverage;
}

/** The totals, per-file figures and the judged unreached pieces of converted coverage. */
export function summarise(seeds: number, checkStatus: number, files: ReadonlyMap<string, FileCoverageData>): GateCoverage {
  const { judged, stale } = judgeUnreached(unreachedOfFiles(files, REPO), readReasons(REASONS_FILE).reasons);
  const coverage: GateCoverage = { seeds, checkStatus, totals: emptyTotals(), files: [], judged, stale };
  for (const [file, data] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const totals = totalsOf(data);
    addTotals(coverage.totals, totals);
    coverage.files.push({ file, totals, unreached: unreachedBranches(data) });
  }
  return coverage;
}

function unreachedLine(judged: readonly Judged[], stale: readonly string[]): string {
  const counts = countByStatus(judged);
  return `unreached in src/: ${judged.length} (${counts.explained} explained, ${counts.reachable} reachable with no seed yet, ${counts.unexplained} unexplained${stale.length === 0 ? '' : `; ${stale.length} reasons no longer match`})`;
}

/**
 * gate.md and gate-summary.json in `out`, and the same unreached list beside the check's own summary
 * (out/check/unreached.md, unreached.json), so whoever reads the check's output sees it.
 */
export function writeReports(out: string, coverage: GateCoverage, at: string, neverLoaded: readonly string[]): void {
  const counts = countByStatus(coverage.judged);
  const summary = { seeds: coverage.seeds, lines: percent(coverage.totals.lines), branches: percent(coverage.totals.branches), totals: coverage.totals, unreached: { total: coverage.judged.length, ...counts, staleReasons: coverage.stale.length } };
  writeFileSync(join(out, 'gate-summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  const markdown = render(coverage, at, neverLoaded, { seeds: coverage.seeds, root: checkRoot(out) });
  writeFileSync(join(out, 'gate.md'), markdown);
  const check = join(out, 'check');
  mkdirSync(check, { recursive: true });
  writeFileSync(join(check, 'unreached.md'), `# src/ the check at ${at} never reached\n\n${unreachedLine(coverage.judged, coverage.stale)}; the full gate report is ../gate.md.\n\n${renderUnreached(coverage.judged, coverage.stale).join('\n')}\n`);
  writeFileSync(join(check, 'unreached.json'), `${JSON.stringify({ commit: at, seeds: coverage.seeds, ...counts, stale: coverage.stale, unreached: coverage.judged }, null, 2)}\n`);
}

/** Renders the reports again from a saved out/coverage-final.json (after editing the reasons file). */
export function rerender(out: string): GateCoverage {
  const saved = JSON.parse(readFileSync(join(out, 'coverage-final.json'), 'utf8')) as Record<string, FileCoverageData>;
  const files = new Map(Object.entries(saved));
  const previous = JSON.parse(readFileSync(join(out, 'gate-summary.json'), 'utf8')) as { seeds: number };
  const coverage = summarise(previous.seeds, 0, files);
  writeReports(out, coverage, `${commit()} (rendered again from coverage-final.json)`, productFiles().filter((file) => !files.has(file)));
  return coverage;
}

/**
 * The root seed the check in `out` ran under (its summary.json), so the config table counts the seeds it
 * really ran; without one, the root a check without --seed takes now (the commit's).
 */
function checkRoot(out: string): string {
  try {
    const summary = JSON.parse(readFileSync(join(out, 'check', 'summary.json'), 'utf8')) as { rootSeed?: unknown };
    if (typeof summary.rootSeed === 'string') return summary.rootSeed;
  } catch {
    // no check summary in `out`: fall through
  }
  return rootSeed(undefined, gitState()).seed;
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** The production files of src/: everything but tests and test helpers. */
function productFiles(): string[] {
  return readdirSync(join(REPO, 'src'), { recursive: true, encoding: 'utf8' })
    .map((file) => `src/${file}`)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.test.ts') && !file.includes('__test-helpers__'));
}

function render(coverage: GateCoverage, at: string, neverLoaded: readonly string[], draw: { seeds: number; root: string }): string {
  const cell = (part: { covered: number; total: number }) => `${percent(part)}% (${part.covered}/${part.total})`;
  const lines = [
    '# What the gate reaches in src/',
    '',
    `\`leasehold check --seeds ${coverage.seeds}\` at commit ${at}, compiled and run under V8 coverage (tools/coverage/gate.ts). Lines ${cell(coverage.totals.lines)}, branches ${cell(coverage.totals.branches)}.`,
    '',
    '| file | lines | branches |',
    '|---|---|---|',
    ...coverage.files.map(({ file, totals }) => `| ${file} | ${cell(totals.lines)} | ${cell(totals.branches)} |`),
    '',
    neverLoaded.length === 0
      ? 'Every production file of src/ was loaded.'
      : `Never loaded by the gate (not in the totals; files of types only hold no statements): ${neverLoaded.join(', ')}.`,
    '',
    ...renderUnreached(coverage.judged, coverage.stale),
    ...renderConfigCoverage(catalogueConfigCoverage(draw), draw),
  ];
  return `${lines.join('\n')}\n`;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) main();
