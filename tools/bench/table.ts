/** Plain-text rendering of the benchmark results. */
import type { Metric, SectionResult } from './registry.ts';

export interface SectionOutcome {
  id: string;
  title: string;
  seconds: number;
  result?: SectionResult;
  error?: string;
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  return Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(3);
}

export function renderTable(outcomes: readonly SectionOutcome[], header: string[]): string {
  const lines: string[] = [...header, ''];
  const rows: string[][] = [['metric', 'value', 'target', 'result', 'per-round min..max (n)']];
  const metrics: Metric[] = [];
  for (const o of outcomes) for (const m of o.result?.metrics ?? []) metrics.push(m);
  for (const m of metrics) {
    rows.push([
      m.id,
      fmt(m.value),
      `${m.target.op} ${m.target.value}`,
      m.pass ? 'PASS' : 'FAIL',
      m.spread ? `${fmt(m.spread.min)}..${fmt(m.spread.max)} (${m.spread.rounds})` : '',
    ]);
  }
  for (const o of outcomes) {
    if (o.error) rows.push([o.id, 'ERROR', '', 'FAIL', o.error.split('\n')[0]!.slice(0, 80)]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const rule = widths.map((w) => '-'.repeat(w)).join('-+-');
  rows.forEach((r, i) => {
    lines.push(r.map((c, j) => pad(c, widths[j]!)).join(' | '));
    if (i === 0) lines.push(rule);
  });
  for (const m of metrics) lines.push(`  ${m.id}: ${m.label}`);

  for (const o of outcomes) {
    lines.push('', `[${o.id}] ${o.title} (${o.seconds.toFixed(1)} s)`);
    if (o.error) {
      lines.push(`  ERROR: ${o.error}`);
      continue;
    }
    const ctx = o.result?.context ?? [];
    const w = Math.max(0, ...ctx.map((c) => c.label.length));
    for (const c of ctx) lines.push(`  ${pad(c.label, w)}  ${c.value}`);
  }
  return lines.join('\n');
}
