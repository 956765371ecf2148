import type { CoverageOutcome } from './coverage.ts';
import { totalOf, type ScenarioTally, type Tally } from './tally.ts';

/** seeds per second of one scenario, per thread: its seeds over the thread time they took. */
export function perThreadRate(row: ScenarioTally): number {
  return row.busyMs > 0 ? row.seeds / (row.busyMs / 1000) : 0;
}

/**
 * The table printed at the end of a check. Per scenario, seeds/s is per thread (the runs of several
 * scenarios interleave, so wall time cannot be split among them); the total row is wall-clock over
 * all threads, which is the number that says how long a CI run takes.
 */
export function summaryTable(tally: Tally, wallMs: number): string[] {
  const total = totalOf(tally.scenarios);
  const header = ['scenario', 'seeds', 'pass', 'safety', 'liveness', 'nondet', 'seeds/s', 'marks reached'];
  const row = (r: ScenarioTally, rate: number) => [r.scenario, r.seeds, r.pass, r.safety, r.liveness, r.nondeterminism, rate.toFixed(1), marksReached(r.marks)].map(String);
  const rows = [header, ...tally.scenarios.map((r) => row(r, perThreadRate(r))), row(total, wallMs > 0 ? total.seeds / (wallMs / 1000) : 0)];
  const widths = header.map((_, column) => Math.max(...rows.map((cells) => (cells[column] as string).length)));
  const render = (cells: string[]) =>
    cells.map((cell, column) => (column === 0 || column === cells.length - 1 ? cell.padEnd(widths[column] as number) : cell.padStart(widths[column] as number))).join('  ').trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [render(header), rule, ...rows.slice(1, -1).map(render), rule, render(rows.at(-1) as string[])];
}

/** `21/25`: marks with a count above zero, of the marks the runs reported. */
export function marksReached(marks: Record<string, number>): string {
  const names = Object.keys(marks);
  return `${names.filter((name) => (marks[name] ?? 0) > 0).length}/${names.length}`;
}

export function coverageLine(coverage: CoverageOutcome): string {
  if (!coverage.enforced) return `coverage: required marks not checked (${coverage.reason})`;
  if (coverage.missing.length === 0) return `coverage: all ${coverage.required.length} required marks reached`;
  return `coverage: MISSING ${coverage.missing.length} of ${coverage.required.length} required marks, never reached: ${coverage.missing.join(', ')}`;
}
