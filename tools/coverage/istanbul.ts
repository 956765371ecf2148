import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import convert from 'ast-v8-to-istanbul';
import libCoverage from 'istanbul-lib-coverage';
import { parseAstAsync } from 'vite';

/**
 * V8 coverage (NODE_V8_COVERAGE output) turned into Istanbul's per-file statement and branch maps, with
 * the engine @vitest/coverage-v8 uses (ast-v8-to-istanbul), remapped through each compiled file's source
 * map to the TypeScript in src/. Used by gate.ts for the coverage of a `leasehold check` run.
 */

interface FunctionCoverage {
  functionName: string;
  ranges: { startOffset: number; endOffset: number; count: number }[];
  isBlockCoverage: boolean;
}
interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: FunctionCoverage[];
}

export interface Location {
  start: { line: number; column: number | null };
  end: { line: number; column: number | null };
}
export interface FileCoverageData {
  path: string;
  statementMap: Record<string, Location>;
  s: Record<string, number>;
  branchMap: Record<string, { type: string; loc: Location; locations: Location[]; line?: number }>;
  b: Record<string, number[]>;
  fnMap: Record<string, { name: string; loc: Location }>;
  f: Record<string, number>;
}

/**
 * Reads every coverage file in `v8Directory` and converts the scripts compiled from `compiledRoot`'s
 * src/ into one coverage map keyed by the TypeScript file's path relative to `repoRoot`. The same file
 * loaded by several threads is merged (counts add up).
 */
export async function coverageOfCompiledSrc(v8Directory: string, compiledRoot: string, repoRoot: string): Promise<Map<string, FileCoverageData>> {
  const map = libCoverage.createCoverageMap({});
  const compiledSrc = join(compiledRoot, 'src') + '/';
  for (const name of readdirSync(v8Directory).filter((file) => file.endsWith('.json'))) {
    const { result } = JSON.parse(readFileSync(join(v8Directory, name), 'utf8')) as { result: ScriptCoverage[] };
    for (const script of result) {
      if (!script.url.startsWith('file://')) continue;
      const path = fileURLToPath(script.url);
      if (!path.startsWith(compiledSrc) || !path.endsWith('.js')) continue;
      const code = readFileSync(path, 'utf8');
      const sourceMap = JSON.parse(readFileSync(`${path}.map`, 'utf8')) as { version: number; sources: string[]; names: string[]; mappings: string };
      const data = await convert({ code, ast: parseAstAsync(code), coverage: { url: script.url, functions: script.functions }, sourceMap, wrapperLength: 0 });
      map.merge(data as never);
    }
  }
  const files = new Map<string, FileCoverageData>();
  for (const file of map.files()) {
    const data = map.fileCoverageFor(file).toJSON() as unknown as FileCoverageData;
    const key = relative(repoRoot, file);
    files.set(key, { ...data, path: key });
  }
  return files;
}

export interface Totals {
  lines: { covered: number; total: number };
  branches: { covered: number; total: number };
  statements: { covered: number; total: number };
  functions: { covered: number; total: number };
}

/** Line, statement, branch and function totals of one file, as Istanbul counts them. */
export function totalsOf(data: FileCoverageData): Totals {
  const fileCoverage = libCoverage.createFileCoverage(data as never);
  const summary = fileCoverage.toSummary();
  const pick = (name: 'lines' | 'branches' | 'statements' | 'functions') => ({ covered: summary[name].covered, total: summary[name].total });
  return { lines: pick('lines'), branches: pick('branches'), statements: pick('statements'), functions: pick('functions') };
}

export function addTotals(into: Totals, add: Totals): Totals {
  for (const key of ['lines', 'branches', 'statements', 'functions'] as const) {
    into[key] = { covered: into[key].covered + add[key].covered, total: into[key].total + add[key].total };
  }
  return into;
}

export function emptyTotals(): Totals {
  return { lines: { covered: 0, total: 0 }, branches: { covered: 0, total: 0 }, statements: { covered: 0, total: 0 }, functions: { covered: 0, total: 0 } };
}

export function percent(part: { covered: number; total: number }): number {
  return part.total === 0 ? 100 : Math.floor((part.covered / part.total) * 10_000) / 100;
}

/** One branch path that never ran: its file, line and which path of which construct. */
export interface UnreachedBranch {
  file: string;
  line: number;
  type: string;
  /** Which path of the construct (0 = the first, e.g. the `if`'s consequent; 1 = its else). */
  path: number;
  paths: number;
}

export function unreachedBranches(data: FileCoverageData): UnreachedBranch[] {
  const unreached: UnreachedBranch[] = [];
  for (const [id, branch] of Object.entries(data.branchMap)) {
    const counts = data.b[id] ?? [];
    counts.forEach((count, path) => {
      if (count !== 0) return;
      const location = branch.locations[path] ?? branch.loc;
      unreached.push({ file: data.path, line: location.start.line ?? branch.loc.start.line, type: branch.type, path, paths: counts.length });
    });
  }
  return unreached.sort((a, b) => a.line - b.line || a.path - b.path);
}
