import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, describe, expect, it } from 'vitest';
import type { TaskEvent, TaskView } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';
import { resolveScenarioArgument } from '../check/scenario-source.ts';
import { planJobs } from '../check/seeds.ts';
import type { CheckOutcome } from '../check/report.ts';
import { ReportAggregator, transitionRows } from './aggregate.ts';
import { writeCatalogueReport } from './catalogue.ts';
import { CHROMIUM_INSTALL_HINT, findChromium, launchChromium, lookAt } from './chromium.ts';
import { rejectionCounts, retryAndFailureReasons, transitionCounts, violationTasks, waitSamples, type RunDigest } from './digest.ts';
import { scenarioReport, type ScenarioReport } from './document.ts';
import { findColour } from './png.test-kit.ts';
import { renderHtml, renderMarkdown } from './render.ts';
import { collectScenario, reportDirName, writeScenarioReport, type WrittenReport } from './run-report.ts';
import { distribution, histogram, percentile, priorityBanding } from './stats.ts';
import { GENERATION_COLOURS } from './svg.ts';
import { buildTimeline, eventTimes } from './timeline-model.ts';

const scratch = mkdtempSync(join(tmpdir(), 'leasehold-report-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let eventId = 0;
function event(taskId: number, type: string, at: number, data: Record<string, unknown>, by?: { workerId: string; generation: number }): TaskEvent {
  eventId++;
  return { id: eventId, taskId, seq: eventId, type, at, data, ...(by === undefined ? {} : by) };
}

function task(id: number, tenant: string, priority: number, state: TaskView['state'], extra: Partial<TaskView> = {}): TaskView {
  return { id, tenant, topic: `t${id}`, version: 1, priority, state, generation: 1, attempts: 1, deliveries: 1, tier: 'standard', cancelRequested: false, enqueuedAt: 0, notBefore: 0, ...extra };
}

describe('report statistics', () => {
  it('takes nearest-rank percentiles', () => {
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(percentile([7], 0.95)).toBe(7);
    expect(percentile([], 0.5)).toBeUndefined();
    const hundred = Array.from({ length: 100 }, (_, index) => index + 1);
    expect(percentile(hundred, 0.95)).toBe(95);
    expect(percentile(hundred, 0.5)).toBe(50);
    expect(percentile(hundred, 1)).toBe(100);
    expect(distribution([30, 10, 20, 1000])).toEqual({ count: 4, p50Ms: 20, p95Ms: 1000, maxMs: 1000 });
    expect(distribution([])).toBeUndefined();
  });

  it('bands priorities: one row each when there are a few, tens otherwise', () => {
    const few = priorityBanding([0, 10, 20]);
    expect([few(0), few(10), few(20)]).toEqual(['priority 0', 'priority 10', 'priority 20']);
    const many = priorityBanding([0, 3, 5, 9, 12, 25, 30]);
    expect([many(0), many(9), many(12), many(25), many(30)]).toEqual(['priority 0-9', 'priority 0-9', 'priority 10-19', 'priority 20-30', 'priority 20-30']);
  });

  it('bins waits with an open last bin and keeps empty bins', () => {
    const bins = histogram([0, 999, 1_000, 5_000, 99_999_999], [1_000, 10_000]);
    expect(bins).toEqual([
      { fromMs: 0, toMs: 1_000, count: 2 },
      { fromMs: 1_000, toMs: 10_000, count: 2 },
      { fromMs: 10_000, toMs: null, count: 1 },
    ]);
  });
});

describe('report digest of a hand-made run', () => {
  // Task 1: enqueued, claimed by w0#1, lease expired, confirmed stopped, claimed by w1#1 (g2), completed.
  // Task 2: enqueued, superseded without naming `from` (replayed from state), never claimed.
  // Task 3: enqueued, claimed, retried (rate_limited), claimed, failed for good.
  eventId = 0;
  const events: TaskEvent[] = [
    event(1, 'enqueued', 0, { to: 'ready' }),
    event(2, 'enqueued', 100, { to: 'ready' }),
    event(3, 'enqueued', 200, { to: 'ready' }),
    event(1, 'claimed', 1_000, { from: 'ready', to: 'running', queueWaitMs: 1_000 }, { workerId: 'w0#1', generation: 1 }),
    event(3, 'claimed', 1_200, { from: 'ready', to: 'running', queueWaitMs: 1_000 }, { workerId: 'w1#1', generation: 1 }),
    event(2, 'superseded', 1_500, { to: 'superseded' }),
    event(3, 'retry_scheduled', 2_000, { from: 'running', to: 'ready', errorClass: 'rate_limited' }),
    event(1, 'lease_expired', 31_000, { from: 'running', to: 'uncertain' }),
    event(1, 'stop_confirmed', 40_000, { from: 'uncertain', to: 'ready' }),
    event(3, 'claimed', 41_000, { from: 'ready', to: 'running' }, { workerId: 'w1#1', generation: 2 }),
    event(1, 'claimed', 42_000, { from: 'ready', to: 'running' }, { workerId: 'w1#1', generation: 2 }),
    event(3, 'failed', 43_000, { from: 'running', to: 'failed', reason: 'not_retryable' }),
    event(1, 'completed', 50_000, { from: 'running', to: 'done' }),
  ];
  const tasks = [task(1, 'acme', 20, 'done', { runMs: 8_000 }), task(2, 'acme', 5, 'superseded'), task(3, 'globex', 5, 'failed')];

  it('counts state transitions per (from, to), replaying the state when an event names no from', () => {
    expect(transitionCounts(events)).toEqual({
      '(enqueue)>ready': 3,
      'ready>running': 4,
      'ready>superseded': 1,
      'running>ready': 1,
      'running>uncertain': 1,
      'uncertain>ready': 1,
      'running>failed': 1,
      'running>done': 1,
    });
  });

  it('lists every edge of the state machine, flags an impossible one, and keeps state order', () => {
    const rows = transitionRows({ '(enqueue)>ready': 3, 'ready>running': 4, 'done>running': 1 });
    expect(rows[0]).toEqual({ from: '(enqueue)', to: 'ready', count: 3, legal: true });
    expect(rows.find((row) => row.from === 'ready' && row.to === 'running')?.count).toBe(4);
    expect(rows.find((row) => row.from === 'uncertain' && row.to === 'failed')).toEqual({ from: 'uncertain', to: 'failed', count: 0, legal: true });
    expect(rows.find((row) => row.from === 'done')).toEqual({ from: 'done', to: 'running', count: 1, legal: false });
    expect(rows.map((row) => row.from).indexOf('running')).toBeGreaterThan(rows.map((row) => row.from).lastIndexOf('ready'));
  });

  it('measures the wait to the first claim only, and counts tasks never claimed by final state', () => {
    const { waits, neverClaimed } = waitSamples(events, tasks);
    expect(waits).toEqual([
      { tenant: 'acme', priority: 20, ms: 1_000 },
      { tenant: 'globex', priority: 5, ms: 1_000 },
    ]);
    expect(neverClaimed).toEqual({ superseded: 1 });
  });

  it('gives retries and failures their reasons, and rejections as op:reason without idle claims', () => {
    expect(retryAndFailureReasons(events)).toEqual({ retries: { 'retry_scheduled: rate_limited': 1, stop_confirmed: 1 }, failures: { not_retryable: 1 } });
    const fail = (index: number, op: string, reason: string): HistoryEntry => ({ type: 'fail', index, timeMs: index, actor: 'w0#1', op, invokeIndex: index - 1, reason });
    expect(rejectionCounts([fail(1, 'claim', 'empty'), fail(2, 'claim', 'quota'), fail(3, 'checkpoint', 'stale_lease'), fail(4, 'checkpoint', 'stale_lease'), fail(5, 'enqueue', 'queue_full')])).toEqual({
      'claim:quota': 1,
      'checkpoint:stale_lease': 2,
      'enqueue:queue_full': 1,
    });
  });

  it('finds the task a violation names, to outline it on the timeline', () => {
    expect(violationTasks({ taskId: 4, message: 'I1 task 9' })).toEqual([4]);
    expect(violationTasks({ message: "expect[7] every-task: task 14 ('acme-ticket-6') ended failed\nsee task 99" })).toEqual([14]);
    expect(violationTasks({ message: 'I3 quota exceeded' })).toEqual([]);
  });

  it('places events on the timeline by the history cursor, across a clock jump', () => {
    const entries: HistoryEntry[] = [
      { type: 'ok', index: 0, timeMs: 500, actor: 'w0#1', op: 'claim', invokeIndex: 0, data: { ev: 4 } },
      { type: 'note', index: 1, timeMs: 600, actor: 'faults', kind: 'clock-jump', data: { deltaMs: 60_000 } },
      { type: 'ok', index: 2, timeMs: 700, actor: 'supervisor', op: 'expireLeases', data: { ev: 9 }, invokeIndex: 1 },
    ];
    const timeOf = eventTimes(entries);
    expect([timeOf(1), timeOf(4), timeOf(5), timeOf(9), timeOf(10)]).toEqual([500, 500, 700, 700, undefined]);
  });

  it('builds lanes, spans and markers: a lease that expired, a kill, a pause and a refused write', () => {
    const entries: HistoryEntry[] = [
      { type: 'note', index: 0, timeMs: 0, actor: 'w0#1', kind: 'start' },
      { type: 'note', index: 1, timeMs: 0, actor: 'w1#1', kind: 'start' },
      { type: 'ok', index: 2, timeMs: 1_000, actor: 'w0#1', op: 'claim', invokeIndex: 2, taskId: 1, data: { ev: 4 } },
      { type: 'ok', index: 3, timeMs: 1_200, actor: 'w1#1', op: 'claim', invokeIndex: 3, taskId: 3, data: { ev: 5 } },
      { type: 'ok', index: 4, timeMs: 2_000, actor: 'w1#1', op: 'fail', invokeIndex: 4, taskId: 3, data: { ev: 7 } },
      { type: 'note', index: 5, timeMs: 5_000, actor: 'w0#1', kind: 'pause' },
      { type: 'ok', index: 6, timeMs: 31_000, actor: 'supervisor', op: 'expireLeases', invokeIndex: 6, data: { ev: 8 } },
      { type: 'note', index: 7, timeMs: 35_000, actor: 'w0#1', kind: 'resume' },
      { type: 'fail', index: 8, timeMs: 35_000, actor: 'w0#1', op: 'checkpoint', invokeIndex: 8, reason: 'stale_lease', taskId: 1, generation: 1, data: { ev: 8 } },
      { type: 'note', index: 9, timeMs: 36_000, actor: 'w0#1', kind: 'kill', data: { reason: 'test' } },
      { type: 'ok', index: 10, timeMs: 40_000, actor: 'supervisor', op: 'confirmStopped', invokeIndex: 10, data: { ev: 9 } },
      { type: 'ok', index: 11, timeMs: 41_000, actor: 'w1#1', op: 'claim', invokeIndex: 11, data: { ev: 10 } },
      { type: 'ok', index: 12, timeMs: 42_000, actor: 'w1#1', op: 'claim', invokeIndex: 12, data: { ev: 11 } },
      { type: 'ok', index: 13, timeMs: 43_000, actor: 'w1#1', op: 'fail', invokeIndex: 13, data: { ev: 12 } },
      { type: 'ok', index: 14, timeMs: 50_000, actor: 'w1#1', op: 'complete', invokeIndex: 14, data: { ev: 13 } },
    ];
    const model = buildTimeline({ seed: '7', index: 0, verdict: 'pass', startMs: 0, safetyEndMs: 45_000, endMs: 60_000, entries, events, tenantOf: (id) => (id === 3 ? 'globex' : 'acme') });
    expect(model.lanes.map((lane) => [lane.id, lane.end])).toEqual([
      ['queue', 'end'],
      ['w0#1', 'killed'],
      ['w1#1', 'end'],
    ]);
    expect(model.lanes[1]!.toMs).toBe(36_000);
    const spans = model.spans.map((span) => [span.taskId, model.lanes[span.lane]!.id, span.generation, span.fromMs, span.toMs, span.end]);
    expect(spans).toEqual([
      [1, 'w0#1', 1, 1_000, 31_000, 'lease_expired'],
      [3, 'w1#1', 1, 1_200, 2_000, 'retry_scheduled'],
      [3, 'w1#1', 2, 41_000, 43_000, 'failed'],
      [1, 'w1#1', 2, 42_000, 50_000, 'completed'],
    ]);
    // Tasks 3 (g2) and 1 (g2) overlap on w1#1: two rows.
    expect(model.lanes[2]!.rows).toBe(2);
    expect(model.markers.map((marker) => [marker.kind, model.lanes[marker.lane]!.id, marker.atMs])).toEqual([
      ['lease-expired', 'w0#1', 31_000],
      ['pause', 'w0#1', 5_000],
      ['resume', 'w0#1', 35_000],
      ['refused', 'w0#1', 35_000],
      ['kill', 'w0#1', 36_000],
    ]);
    expect(model.bands).toEqual([{ lane: 1, fromMs: 5_000, toMs: 35_000, kind: 'paused' }]);
  });
});

function digest(index: number, verdict: RunDigest['verdict'], waits: number[], transitions: Record<string, number>): RunDigest {
  return {
    index,
    seed: String(1000 + index),
    verdict,
    traceHash: `hash${index}`,
    violations: verdict === 'pass' ? [] : [{ invariant: 'I1', kind: 'safety', message: 'I1 two holders of task 3' }],
    violationCount: verdict === 'pass' ? 0 : 1,
    marks: { kill: index, pause: 0 },
    metrics: { tasks: waits.length, simulatedMs: 1_000 },
    transitions,
    waits: waits.map((ms, position) => ({ tenant: position % 2 === 0 ? 'acme' : 'globex', priority: position % 2 === 0 ? 0 : 20, ms })),
    neverClaimed: {},
    runs: [],
    takeovers: index === 0 ? [] : [{ latencyMs: 31_000 * index, resumed: true }],
    retries: { stop_confirmed: index },
    failures: {},
    rejections: { 'claim:quota': 2 },
    settlements: { holds: 2, settled: 2, released: 0, stillHeld: 0, heldCredits: 40, chargedCredits: 7 },
    effects: { ledger: 1, providerExecutions: 1, providerRequests: 2, deadLetters: 0 },
    finalStates: { done: 2 },
    admission: {},
    edges: {},
    budgets: { specs: {}, peaks: [] },
    timeline: { seed: String(1000 + index), index, verdict, endMs: 10, safetyEndMs: 5, lanes: [], spans: [], markers: [], bands: [], truncated: { spans: 0, markers: 0 }, highlight: [] },
  };
}

describe('report aggregation over seeds', () => {
  const digests = [
    digest(0, 'pass', [100, 300], { '(enqueue)>ready': 2, 'ready>running': 2 }),
    digest(1, 'safety', [200, 5_000], { '(enqueue)>ready': 2, 'ready>running': 3, 'running>uncertain': 1 }),
    digest(2, 'pass', [400, 600], { '(enqueue)>ready': 2, 'ready>running': 2 }),
  ];

  it('sums counters, takes percentiles over every sample, and does not depend on arrival order', () => {
    const forward = new ReportAggregator();
    for (const item of digests) forward.add(structuredClone(item));
    const backward = new ReportAggregator();
    for (const item of [...digests].reverse()) backward.add(structuredClone(item));
    const figures = forward.figures();
    expect(backward.figures()).toEqual(figures);
    expect(figures.verdicts).toEqual({ pass: 2, safety: 1, liveness: 0, nondeterminism: 0 });
    expect(figures.seeds.map((row) => row.index)).toEqual([0, 1, 2]);
    expect(figures.seeds[1]!.reason).toBe('I1 two holders of task 3');
    expect(figures.transitions.find((row) => row.from === 'ready' && row.to === 'running')?.count).toBe(7);
    expect(figures.transitions.find((row) => row.from === 'running' && row.to === 'uncertain')?.count).toBe(1);
    expect(figures.wait.overall).toEqual({ count: 6, p50Ms: 300, p95Ms: 5_000, maxMs: 5_000 });
    expect(figures.wait.byPriority.map((row) => [row.label, row.count, row.p50Ms, row.maxMs])).toEqual([
      ['priority 0', 3, 200, 400],
      ['priority 20', 3, 600, 5_000],
    ]);
    expect(figures.wait.byTenant.map((row) => row.label)).toEqual(['acme', 'globex']);
    expect(figures.takeover.all).toEqual({ count: 2, p50Ms: 31_000, p95Ms: 62_000, maxMs: 62_000 });
    expect(figures.retries).toEqual([['stop_confirmed', 3]]);
    expect(figures.rejections).toEqual([{ op: 'claim', reason: 'quota', count: 6 }]);
    expect(figures.settlements).toEqual({ holds: 6, settled: 6, released: 0, stillHeld: 0, heldCredits: 120, chargedCredits: 21 });
    expect(figures.marks.find((row) => row.mark === 'kill')).toEqual({ mark: 'kill', total: 3, seeds: 2 });
    expect(figures.marks.find((row) => row.mark === 'pause')).toEqual({ mark: 'pause', total: 0, seeds: 0 });
    // The first failing seed's timeline is drawn, not the first seed's.
    expect(figures.timeline?.index).toBe(1);
  });

  it('keeps a crashed seed as a verdict line', () => {
    const aggregator = new ReportAggregator();
    aggregator.add(digests[0]!);
    aggregator.addCrash(1, '1001', 'Error: boom\n    at somewhere');
    const figures = aggregator.figures();
    expect(figures.verdicts.nondeterminism).toBe(1);
    expect(figures.seeds[1]).toMatchObject({ seed: '1001', verdict: 'nondeterminism', reason: 'harness crash: Error: boom' });
  });
});

/** Anything in a page that would reach outside it: a report must open offline and alone. */
function externalReferences(html: string): string[] {
  const found: string[] = [];
  for (const match of html.matchAll(/\b(?:src|href)\s*=\s*"([^"]*)"/g)) {
    const target = match[1]!;
    if (!target.startsWith('#') && !target.startsWith('data:') && !/^[\w.-]+(\/[\w.-]+)*\/?(#[\w-]+)?$/.test(target)) found.push(match[0]);
  }
  for (const match of html.matchAll(/https?:\/\/[^\s"'<>)]+/g)) if (match[0] !== 'http://www.w3.org/2000/svg') found.push(match[0]);
  if (/<script\b|<link\b(?![^>]*rel="icon")|@import|@font-face/i.test(html)) found.push('script, stylesheet link, @import or @font-face');
  for (const match of html.matchAll(/url\(([^)]*)\)/g)) if (!match[1]!.startsWith('#')) found.push(match[0]);
  return found;
}

describe('the HTML report of a real run, in headless Chromium', () => {
  const out = join(scratch, 'zombie-pause');
  const seedsRun = planJobs('report-test', ['zombie-pause'], 1);
  let built: Promise<WrittenReport> | undefined;
  /** One seed of zombie-pause (pauses, lease expiries, refused writes, a second generation), written once. */
  const buildReport = () =>
    (built ??= (async () => {
      const source = resolveScenarioArgument('zombie-pause', 'test');
      const { aggregator } = await collectScenario({ source, jobs: seedsRun, threads: 1, progress: { tty: false, line: () => {} } });
      const report = scenarioReport(
        {
          source,
          root: { seed: 'report-test', source: 'flag' },
          git: { commit: 'f'.repeat(40), dirty: false },
          versions: { leasehold: 't', node: 't', betterSqlite3: 't', sqlite: 't', platform: 't' },
          command: 'leasehold report --scenario zombie-pause --seeds 1 --seed report-test',
        },
        aggregator.figures(),
      );
      return writeScenarioReport(out, report);
    })());

  it('writes report.md, report.json, index.html and timeline.svg from one seed', async () => {
    const written = await buildReport();
    for (const file of [written.html, written.markdown, written.json, written.svg!]) expect(existsSync(file)).toBe(true);
    const html = readFileSync(written.html, 'utf8');
    expect(externalReferences(html)).toEqual([]);
    expect(html).toContain('<svg xmlns="http://www.w3.org/2000/svg" class="timeline"');
    expect(html).toContain('class="histogram"');
    const json = JSON.parse(readFileSync(written.json, 'utf8')) as ScenarioReport;
    expect(json.seeds.list).toEqual([seedsRun[0]!.seed]);
    expect(json.git.commit).toBe('f'.repeat(40));
    expect(json.figures.timeline?.spans.length).toBeGreaterThan(0);
    expect(json.figures.timeline?.markers.some((marker) => marker.kind === 'pause')).toBe(true);
    const markdown = readFileSync(written.markdown, 'utf8');
    expect(markdown).toContain('| from | to | event | operation | count |');
    expect(markdown).toMatch(/\| running \| uncertain \| lease_expired \| expiry \| [1-9]/);
    expect(renderMarkdown(json)).toBe(markdown);
    expect(renderHtml(json)).toBe(html);
  });

  it('the checker of self-containment catches what it must', () => {
    expect(externalReferences('<img src="https://example.com/x.png"><rect fill="url(#ok)"/>')).toEqual(['src="https://example.com/x.png"', 'https://example.com/x.png']);
    expect(externalReferences('<script src="a.js"></script>')).toEqual(['script, stylesheet link, @import or @font-face']);
    expect(externalReferences('<style>@import "x.css";</style>')).toHaveLength(1);
    expect(externalReferences('<style>.x { background: url(x.png) }</style>')).toEqual(['url(x.png)']);
    expect(externalReferences('<a href="mixed/index.html#timeline">x</a><link rel="icon" href="data:,"><svg xmlns="http://www.w3.org/2000/svg"></svg>')).toEqual([]);
  });

  it('opens without console errors, and the timeline is visible in a screenshot', async () => {
    const binary = await findChromium();
    if (binary === undefined) throw new Error(`headless Chromium is needed for this test and is not installed: run \`${CHROMIUM_INSTALL_HINT}\` (as root), or set LEASEHOLD_CHROMIUM to the binary`);
    const written = await buildReport();
    const browser = await launchChromium(binary);
    try {
      // The console detector itself, on a page that does make noise: if this ever stops seeing it, the
      // "no console errors" below would pass for the wrong reason.
      const noisy = join(scratch, 'noisy.html');
      writeFileSync(noisy, '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body><script>console.error("planted-console-error"); throw new Error("planted-uncaught");</script></body></html>');
      const control = await lookAt(browser, noisy, { width: 400, height: 300 });
      expect(control.console.join('\n')).toContain('planted-console-error');
      expect(control.console.join('\n')).toContain('planted-uncaught');

      // The legend repeats the timeline's colours in its swatches, so the page as a whole has them even
      // with no span or marker drawn: the plot's and the legend's boxes are measured on the page that was
      // screenshot, to count the colours in each.
      const look = await lookAt(browser, written.html, { width: 1400, height: 2000, boxes: { plot: 'svg.timeline g.tl-plot', legend: 'svg.timeline g.tl-legend-box' } });
      expect(look.console).toEqual([]);
      // LEASEHOLD_KEEP_SCREENSHOT=FILE keeps the picture, to look at it.
      const keep = process.env.LEASEHOLD_KEEP_SCREENSHOT;
      if (keep !== undefined && keep !== '') writeFileSync(keep, look.png);
      const pixels = PNG.sync.read(look.png);
      expect([pixels.width, pixels.height]).toEqual([1400, 2000]);
      // The timeline is on screen: first- and second-generation spans and the lease-expiry diamonds are
      // drawn in their colours, and only the timeline (its plot and its legend) uses them.
      const generation1 = findColour(pixels, GENERATION_COLOURS[0]);
      const generation2 = findColour(pixels, GENERATION_COLOURS[1]);
      const leaseExpired = findColour(pixels, '#ff9f1c');
      expect(generation1.count).toBeGreaterThan(300);
      expect(generation2.count).toBeGreaterThan(50);
      expect(leaseExpired.count).toBeGreaterThan(20);
      expect(generation1.firstRow).toBeGreaterThan(100);
      expect(generation1.lastRow).toBeLessThan(1_200);

      // Count them again in the plot alone, the legend's box left out, where only spans and markers can put them.
      const { plot, legend } = look.boxes;
      expect(plot, 'the plot is laid out').toBeDefined();
      expect(legend, 'the legend is laid out').toBeDefined();
      // The legend sits below the plot, so the plot's region holds no part of it.
      expect(legend!.top).toBeGreaterThanOrEqual(plot!.bottom);
      const inPlot = (hex: string) => findColour(pixels, hex, 6, plot).count;
      const inLegend = (hex: string) => findColour(pixels, hex, 6, legend).count;
      // The boxes are where the screenshot drew: the legend's swatches are inside its box.
      expect(inLegend(GENERATION_COLOURS[0])).toBeGreaterThan(100);
      expect(inLegend(GENERATION_COLOURS[1])).toBeGreaterThan(100);
      expect(inLegend('#ff9f1c')).toBeGreaterThan(20);
      // One legend swatch is about 150 pixels and one diamond about 55; this seed draws many times that in
      // the plot (about 7,500 first-generation, 1,650 second-generation and 500 lease-expiry pixels).
      expect(inPlot(GENERATION_COLOURS[0]), 'first-generation spans in the plot').toBeGreaterThan(1_000);
      expect(inPlot(GENERATION_COLOURS[1]), 'second-generation spans in the plot').toBeGreaterThan(200);
      expect(inPlot('#ff9f1c'), 'lease-expiry markers in the plot').toBeGreaterThan(100);
    } finally {
      await browser.close();
    }
  });
});

describe('the catalogue report', () => {
  it('writes a report per scenario and an index linking each, from the digests a check collected', () => {
    const sources = ['mixed', 'zombie-pause'].map((name) => resolveScenarioArgument(name, 'test'));
    const aggregators = new Map(sources.map((source) => [source.name, new ReportAggregator()]));
    aggregators.get('mixed')!.add(digest(0, 'pass', [100, 200], { '(enqueue)>ready': 2 }));
    aggregators.get('zombie-pause')!.add(digest(0, 'liveness', [300], { '(enqueue)>ready': 1 }));
    const row = (scenario: string, pass: number, liveness: number) => ({ scenario, seeds: 1, pass, safety: 0, liveness, nondeterminism: 0, busyMs: 1, marks: {} });
    const outcome: CheckOutcome = {
      request: {
        sources,
        seedsPerScenario: 1,
        root: { seed: 'cat', source: 'flag' },
        git: { commit: undefined, dirty: false },
        threads: 1,
        unseedRate: 0,
        failuresDir: join(scratch, 'catalogue', 'failures'),
        reproduce: 'leasehold check --seeds 1 --seed cat',
        report: true,
      },
      counted: { scenarios: [row('mixed', 1, 0), row('zombie-pause', 0, 1)], runs: [], failures: [], mismatches: [], unseedChecked: 0 },
      coverage: { enforced: false, reason: 'test', required: [] },
      written: [],
      wallMs: 1_000,
      threadsUsed: 1,
      exitCode: 2,
    };
    const dir = join(scratch, 'catalogue');
    const written = writeCatalogueReport(dir, outcome, aggregators);
    const index = readFileSync(written.html, 'utf8');
    expect(externalReferences(index)).toEqual([]);
    for (const name of ['mixed', 'zombie-pause']) {
      expect(index).toContain(`href="${name}/index.html"`);
      const page = readFileSync(join(dir, name, 'index.html'), 'utf8');
      expect(page).toContain('href="../index.html"');
      expect(externalReferences(page)).toEqual([]);
    }
    expect(index).toContain('FAIL (exit 2)');
    expect(readFileSync(written.markdown, 'utf8')).toContain('| zombie-pause | 1 | 0 pass, 1 liveness |');
    // A catalogue report reruns with `leasehold report`, on the same seeds the check ran.
    expect(written.reports[0]!.command).toBe('leasehold report --scenario mixed --seeds 1 --seed cat');
  });

  it('keeps a scenario name from leaving its directory', () => {
    expect(['mixed', '../etc', 'a/b c', '.hidden', ''].map(reportDirName)).toEqual(['mixed', '__etc', 'a_b_c', '_hidden', '_']);
  });
});

describe('screenshot colour counts', () => {
  it('count only inside the region asked for, widened to whole pixels', () => {
    // A 4x3 picture, white but for two blue pixels: (1, 0) and (3, 2).
    const rgba = new Uint8Array(4 * 3 * 4).fill(255);
    for (const [x, y] of [[1, 0], [3, 2]] as const) rgba.set([0x4e, 0x79, 0xa7, 255], (y * 4 + x) * 4);
    const pixels = { width: 4, height: 3, data: rgba };
    expect(findColour(pixels, '#4e79a7')).toEqual({ count: 2, firstRow: 0, lastRow: 2 });
    expect(findColour(pixels, '#4e79a7', 6, { left: 0, top: 0, right: 2, bottom: 2 })).toEqual({ count: 1, firstRow: 0, lastRow: 0 });
    expect(findColour(pixels, '#4e79a7', 6, { left: 2, top: 1, right: 3.2, bottom: 2.5 })).toEqual({ count: 1, firstRow: 2, lastRow: 2 });
    expect(findColour(pixels, '#4e79a7', 6, { left: 0, top: 1, right: 3, bottom: 3 }).count).toBe(0);
  });
});
