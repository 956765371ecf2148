import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '../../src/queue/types.ts';
import { fairShareBound } from '../../src/queue/fair-share.ts';
import { resolveScenarioArgument } from '../check/scenario-source.ts';
import { planJobs } from '../check/seeds.ts';
import { scenarioReport, type ScenarioReport } from './document.ts';
import { gapPoints, renderHtml, renderMarkdown } from './render.ts';
import { collectScenario } from './run-report.ts';
import { seriesChartSvg } from './svg.ts';
import { depthSeries, fairShareSeries } from './tenant-series.ts';

/**
 * Issue 34 item 5: the fair-share plot (weighted service per tenant, with I19's bound), the depth per
 * tenant, and the first violation right under the badge of a failing report.
 */

async function reportOf(name: string): Promise<ScenarioReport> {
  const source = resolveScenarioArgument(name, 'test');
  const { aggregator } = await collectScenario({ source, jobs: planJobs('tenant-charts-test', [name], 1), threads: 1, progress: { tty: false, line: () => {} } });
  return scenarioReport(
    {
      source,
      root: { seed: 'tenant-charts-test', source: 'flag' },
      git: { commit: 'f'.repeat(40), dirty: false },
      versions: { leasehold: 't', node: 't', betterSqlite3: 't', sqlite: 't', platform: 't' },
      command: `leasehold report --scenario ${name} --seeds 1 --seed tenant-charts-test`,
    },
    aggregator.figures(),
  );
}

/** The data-series of each series path inside the svg of a class. */
function seriesOf(html: string, svgClass: string): string[] {
  const svg = new RegExp(`<svg [^>]*class="${svgClass}"[\\s\\S]*?</svg>`).exec(html)?.[0] ?? '';
  return [...svg.matchAll(/<path class="series" data-series="([^"]*)"/g)].map((match) => match[1]!);
}

let eventId = 0;
function event(taskId: number, type: string, at: number, data: Record<string, unknown>): TaskEvent {
  eventId++;
  return { id: eventId, taskId, seq: eventId, type, at, data };
}

describe('per-tenant series', () => {
  it('counts the tasks waiting per tenant from the event log', () => {
    const events = [event(1, 'enqueued', 0, { to: 'ready' }), event(2, 'enqueued', 10, { to: 'ready' }), event(3, 'enqueued', 10, { to: 'ready' }), event(1, 'claimed', 20, { from: 'ready', to: 'running' }), event(1, 'completed', 30, { from: 'running', to: 'done' }), event(2, 'claimed', 40, { to: 'running' })];
    const tenant = (id: number) => (id === 1 ? 'a' : 'b');
    const { series, omitted } = depthSeries(events, tenant, 0, 50);
    expect(omitted).toBe(0);
    expect(series).toEqual([
      { tenant: 'a', points: [{ at: 0, value: 1 }, { at: 20, value: 0 }] },
      { tenant: 'b', points: [{ at: 0, value: 0 }, { at: 10, value: 2 }, { at: 40, value: 1 }] },
    ]);
  });

  it('divides service by weight and states the bound in the same units', () => {
    const books = new Map([
      ['gold', [{ at: 5, service: 400 }]],
      ['plain', [{ at: 6, service: 100 }]],
    ]);
    const fair = fairShareSeries(books, 100, (tenant) => (tenant === 'gold' ? 2 : 1), () => 2, 0, 10);
    expect(fair.tenants.map((row) => row.points[row.points.length - 1]!.value)).toEqual([200, 100]);
    expect(fair.bound).toBe(Number(fairShareBound(100, 2, 2, 2, 1)) / 2);
    // The gap counts only tenants with work waiting.
    const gap = gapPoints(fair.tenants, [
      { tenant: 'gold', points: [{ at: 0, value: 1 }] },
      { tenant: 'plain', points: [{ at: 0, value: 1 }, { at: 8, value: 0 }] },
    ]);
    expect(gap).toEqual([{ at: 0, value: 0 }, { at: 5, value: 200 }, { at: 6, value: 100 }, { at: 8, value: 0 }]);
  });

  it('keeps a hostile tenant name as text in a chart', () => {
    const hostile = `<script>alert("x")</script>&'`;
    const svg = seriesChartSvg({ className: 'depth-plot', title: hostile, caption: hostile, yTitle: hostile, fromMs: 0, toMs: 1_000, series: [{ label: hostile, points: [{ at: 0, value: 1 }] }], line: { value: 2, label: hostile } });
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;');
  });
});

describe('the tenant sections of a real report', () => {
  it('draws fair share (each tenant, the gap and the bound) and the depth per tenant for fair-share-cost', async () => {
    const report = await reportOf('fair-share-cost');
    const html = renderHtml(report);
    const tenants = ['gold', 'late', 'quick', 'slow'];
    expect(html).toContain('<h2 id="fair-share">Fair share</h2>');
    expect(seriesOf(html, 'fair-share-plot')).toEqual(['gold (w 2)', 'late (w 1)', 'quick (w 1)', 'slow (w 1)']);
    expect(seriesOf(html, 'fair-share-gap-plot')).toEqual(['gap among tenants with work waiting']);
    const fair = report.figures.timeline!.tenantCharts!.fairShare!;
    expect(fair.maxCharge).toBeGreaterThan(0);
    expect(fair.bound).toBeGreaterThan(0);
    expect(html).toMatch(/<svg [^>]*class="fair-share-gap-plot"[\s\S]*?class="series-bound"[\s\S]*?<\/svg>/);
    expect(html).toContain('<h2 id="depth">Depth per tenant</h2>');
    expect(seriesOf(html, 'depth-plot')).toEqual(tenants);
    // Both right after the timeline, fair share first.
    expect(html.indexOf('id="timeline"')).toBeLessThan(html.indexOf('id="fair-share"'));
    expect(html.indexOf('id="fair-share"')).toBeLessThan(html.indexOf('id="depth"'));
    const markdown = renderMarkdown(report);
    expect(markdown).toContain('## Fair share');
    expect(markdown).toContain('## Depth per tenant');
    for (const tenant of tenants) expect(markdown).toMatch(new RegExp(`\\| ${tenant} \\|`));
  }, 120_000);

  it('draws the depth per tenant, and no fair-share section, for a scenario without fair share', async () => {
    const report = await reportOf('retry-storm');
    const html = renderHtml(report);
    expect(html).not.toContain('id="fair-share"');
    expect(html).toContain('<h2 id="depth">Depth per tenant</h2>');
    expect(seriesOf(html, 'depth-plot')).toEqual(report.figures.timeline!.tenantCharts!.depth.map((row) => row.tenant));
    expect(seriesOf(html, 'depth-plot').length).toBeGreaterThan(0);
  }, 120_000);

  it('shows the first violation of a failing report right under its badge, as text', async () => {
    const report = await reportOf('retry-storm');
    const hostile = 'task 3 <img src=x onerror=alert(1)> "quoted"';
    const row = report.figures.seeds[0]!;
    row.verdict = 'safety';
    row.reason = hostile;
    row.violations = [{ invariant: 'I1', kind: 'safety', message: hostile }];
    report.figures.verdicts = { ...report.figures.verdicts, pass: report.figures.verdicts.pass - 1, safety: 1 };
    report.replays[row.seed] = 'npx leasehold check --scenario retry-storm --replay-seed 1';
    const html = renderHtml(report);
    const badge = html.indexOf('class="badge fail"');
    const violation = html.indexOf('id="first-violation"');
    expect(badge).toBeGreaterThan(0);
    expect(violation).toBeGreaterThan(badge);
    // Nothing between the badge and the violation: the provenance table comes after it.
    expect(html.slice(badge, violation)).not.toContain('<table');
    expect(html.indexOf('<table class="kv">')).toBeGreaterThan(violation);
    expect(html).toContain('I1 (safety): task 3 &lt;img src=x onerror=alert(1)&gt; &quot;quoted&quot;');
    expect(html).not.toContain('<img src=x');
  }, 120_000);
});
