/**
 * Every piece of src/ the gate's `leasehold check` run does not reach, named by a stable key and
 * compared with the human-curated reasons in tools/coverage/unreached.json.
 *
 * What is listed, per file:
 * - each branch path that never ran (`if`, `?:`, `??`, `||`, `switch` case, default argument);
 * - each function that never ran (a method no scenario calls has no branch of its own to show);
 * - uncovered line ranges, each attributed to the unreached branch path or function that contains it;
 *   a range inside neither (statements after a call that always throws) gets its own key.
 *
 * Keys survive small edits: `file › function › kind: snippet [path k/n]`, where the snippet is the
 * whitespace-normalised source text of the line the construct starts on (at most 80 characters) and
 * the function is the innermost enclosing one (`(top)` outside any). No line number is in the key, so
 * moving code keeps its reason; editing the line itself asks for the reason to be read again, which is
 * the point. Two constructs with the same key in one function get `#2`, `#3` in source order.
 *
 * A reason starting with REACHABLE_PREFIX says the behaviour is real and no scenario exercises it yet:
 * a seed to add, not an excuse. A key with no reason is "unexplained".
 *
 *   npx tsx tools/coverage/gate.ts --render --out reports/coverage   (gate.md again from coverage-final.json)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FileCoverageData, Location } from './istanbul.ts';

export const REACHABLE_PREFIX = 'reachable, no seed yet';

export type UnreachedKind = 'branch' | 'function' | 'lines';

export interface Unreached {
  key: string;
  file: string;
  /** Where it is now (for the reader; not part of the key). */
  line: number;
  kind: UnreachedKind;
  function: string;
  snippet: string;
  /** For a branch: the construct, and which of its paths. */
  construct?: string;
  path?: number;
  paths?: number;
  /** Uncovered line ranges this entry accounts for. */
  lines: [number, number][];
}

export type Status = 'explained' | 'reachable' | 'unexplained';

export interface Judged extends Unreached {
  status: Status;
  reason?: string;
}

export interface ReasonsFile {
  _comment?: string;
  reasons: Record<string, string>;
}

const SNIPPET_MAX = 80;

function snippetOf(source: readonly string[], line: number): string {
  const text = (source[line - 1] ?? '').replace(/\s+/g, ' ').trim();
  return text.length > SNIPPET_MAX ? `${text.slice(0, SNIPPET_MAX - 1)}…` : text;
}

function contains(outer: Location, line: number): boolean {
  return outer.start.line <= line && line <= outer.end.line;
}

function span(location: Location): number {
  return location.end.line - location.start.line;
}

/** The innermost function of `data` whose body holds `line`, by name. */
function functionAt(data: FileCoverageData, line: number, exclude?: string): { id: string; name: string } | undefined {
  let best: { id: string; name: string; loc: Location } | undefined;
  for (const [id, fn] of Object.entries(data.fnMap)) {
    if (id === exclude || !contains(fn.loc, line)) continue;
    if (best === undefined || span(fn.loc) < span(best.loc)) best = { id, name: fn.name, loc: fn.loc };
  }
  return best === undefined ? undefined : { id: best.id, name: functionName(best.name) };
}

/**
 * ast-v8-to-istanbul names anonymous functions `(anonymous_N)` and the second and later constructors of
 * a file `constructor_N`: the numbers move with every edit elsewhere in the file, so they are dropped
 * (the snippet tells such functions apart).
 */
function functionName(name: string): string {
  if (/^\(anonymous_\d+\)$/.test(name)) return '(anonymous)';
  return name.replace(/^constructor_\d+$/, 'constructor');
}

/** Merges sorted line numbers into inclusive ranges. */
export function ranges(lines: readonly number[]): [number, number][] {
  const sorted = [...new Set(lines)].sort((a, b) => a - b);
  const out: [number, number][] = [];
  for (const line of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && line === last[1] + 1) last[1] = line;
    else out.push([line, line]);
  }
  return out;
}

/**
 * The unreached pieces of one file. `source` is the TypeScript text (its lines give the snippets).
 */
export function unreachedOf(data: FileCoverageData, source: string): Unreached[] {
  const text = source.split('\n');
  const found: (Omit<Unreached, 'key' | 'lines'> & { region: Location; lines: [number, number][] })[] = [];
  const uncoveredFns = new Set<string>();
  for (const [id, fn] of Object.entries(data.fnMap)) {
    if ((data.f[id] ?? 0) !== 0) continue;
    uncoveredFns.add(id);
    const line = fn.loc.start.line;
    const outer = functionAt(data, line, id);
    const name = functionName(fn.name);
    found.push({ file: data.path, line, kind: 'function', function: outer === undefined ? name : `${outer.name} › ${name}`, snippet: snippetOf(text, line), region: fn.loc, lines: [] });
  }
  for (const [id, branch] of Object.entries(data.branchMap)) {
    const counts = data.b[id] ?? [];
    counts.forEach((count, path) => {
      if (count !== 0) return;
      const start = branch.loc.start.line;
      const fn = functionAt(data, start);
      // A branch inside a function that never ran says nothing the function's own entry does not.
      if (fn !== undefined && uncoveredFns.has(fn.id)) return;
      const region = branch.locations[path] ?? branch.loc;
      found.push({
        file: data.path,
        line: region.start.line ?? start,
        kind: 'branch',
        function: fn?.name ?? '(top)',
        snippet: snippetOf(text, start),
        construct: branch.type,
        path,
        paths: counts.length,
        region: region.start.line === undefined ? branch.loc : region,
        lines: [],
      });
    });
  }
  // Uncovered statements, attributed to the smallest unreached region holding them.
  const orphans: number[] = [];
  for (const [id, statement] of Object.entries(data.statementMap)) {
    if ((data.s[id] ?? 0) !== 0) continue;
    const line = statement.start.line;
    let owner: (typeof found)[number] | undefined;
    for (const candidate of found) {
      if (!contains(candidate.region, line)) continue;
      if (owner === undefined || span(candidate.region) < span(owner.region)) owner = candidate;
    }
    if (owner === undefined) orphans.push(line);
    else owner.lines.push([line, statement.end.line]);
  }
  for (const [from, to] of ranges(orphans)) {
    const fn = functionAt(data, from);
    found.push({ file: data.path, line: from, kind: 'lines', function: fn?.name ?? '(top)', snippet: snippetOf(text, from), region: { start: { line: from, column: 0 }, end: { line: to, column: 0 } }, lines: [[from, to]] });
  }
  found.sort((a, b) => a.line - b.line || (a.path ?? 0) - (b.path ?? 0));
  const seen = new Map<string, number>();
  return found.map(({ region: _region, lines, ...rest }) => {
    const base = `${rest.file} › ${rest.function} › ${rest.kind}: ${rest.snippet}${rest.kind === 'branch' ? ` [${rest.construct} path ${rest.path}/${rest.paths}]` : ''}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    const covered = ranges(lines.flatMap(([from, to]) => Array.from({ length: to - from + 1 }, (_, index) => from + index)));
    return { ...rest, key: n === 1 ? base : `${base} #${n}`, lines: covered };
  });
}

export function judgeUnreached(found: readonly Unreached[], reasons: Readonly<Record<string, string>>): { judged: Judged[]; stale: string[] } {
  const judged = found.map((entry): Judged => {
    const reason = reasons[entry.key];
    if (reason === undefined || reason.trim() === '') return { ...entry, status: 'unexplained' };
    return { ...entry, status: reason.startsWith(REACHABLE_PREFIX) ? 'reachable' : 'explained', reason };
  });
  const keys = new Set(found.map((entry) => entry.key));
  return { judged, stale: Object.keys(reasons).filter((key) => !keys.has(key)).sort() };
}

export function readReasons(path: string): ReasonsFile {
  if (!existsSync(path)) return { reasons: {} };
  return JSON.parse(readFileSync(path, 'utf8')) as ReasonsFile;
}

export function unreachedOfFiles(files: ReadonlyMap<string, FileCoverageData>, repo: string): Unreached[] {
  const out: Unreached[] = [];
  for (const [file, data] of [...files].sort(([a], [b]) => a.localeCompare(b))) out.push(...unreachedOf(data, readFileSync(join(repo, file), 'utf8')));
  return out;
}

export function countByStatus(judged: readonly Judged[]): Record<Status, number> {
  const counts: Record<Status, number> = { explained: 0, reachable: 0, unexplained: 0 };
  for (const entry of judged) counts[entry.status]++;
  return counts;
}

function linesText(lines: readonly [number, number][]): string {
  return lines.length === 0 ? '' : ` (lines ${lines.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(', ')})`;
}

/** The markdown section: every unreached piece grouped by file, with its reason or "unexplained". */
export function renderUnreached(judged: readonly Judged[], stale: readonly string[]): string[] {
  const counts = countByStatus(judged);
  const lines = [
    '## What the gate never reaches, and why',
    '',
    `${judged.length} unreached pieces of src/ (branch paths, functions never called, stray line ranges): ${counts.explained} explained, ${counts.reachable} "${REACHABLE_PREFIX}" (real behaviour no scenario exercises: seeds to add), ${counts.unexplained} unexplained. Reasons live in tools/coverage/unreached.json, keyed \`file › function › kind: source line [construct path k/n]\`.`,
    '',
  ];
  const byFile = new Map<string, Judged[]>();
  for (const entry of judged) byFile.set(entry.file, [...(byFile.get(entry.file) ?? []), entry]);
  for (const [file, entries] of byFile) {
    lines.push(`### ${file} (${entries.length})`, '');
    for (const entry of entries) {
      const what = entry.kind === 'branch' ? `${entry.construct} path ${entry.path}/${entry.paths}` : entry.kind === 'function' ? 'function never ran' : 'lines never ran';
      const why = entry.status === 'unexplained' ? '**unexplained**' : entry.status === 'reachable' ? `**${entry.reason}**` : entry.reason;
      lines.push(`- line ${entry.line}, ${entry.function}: ${what}${linesText(entry.lines)} \`${entry.snippet.replace(/`/g, "'")}\` — ${why}`);
    }
    lines.push('');
  }
  if (stale.length > 0) {
    lines.push('### Reasons whose code the gate now reaches (or whose line changed): read them again', '');
    for (const key of stale) lines.push(`- ${key}`);
    lines.push('');
  }
  return lines;
}
