import { canonicalJson, type JsonValue } from '../canonical-json.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { LabelledDistribution, ReportFigures } from './aggregate.ts';
import type { ScenarioReport } from './document.ts';
import type { Distribution } from './stats.ts';
import { formatMs } from './stats.ts';
import { describeScope } from './budget-series.ts';
import type { BudgetPlot } from './digest.ts';
import { budgetPlotSvg, esc, histogramSvg, seriesChartSvg, timelineSvg } from './svg.ts';
import { formatCount } from './axes.ts';
import type { TenantCharts } from './tenant-series.ts';
import { toolGraphMarkdown, toolGraphSvg } from './tool-graphs.ts';
import { own } from '../own.ts';
import { drawnPartOf, explicitTasksOf, floodsOf, workloadTenants } from '../workloads/index.ts';

/**
 * report.md and index.html of one scenario, from its report.json value. Both show the same sections in
 * the same order; the HTML adds the two SVG figures (timeline, wait histogram).
 */

/** The scenario's shape in a few lines, whatever optional parts it uses. */
export function scenarioFacts(spec: ScenarioSpec): [string, string][] {
  const { workload, workers, faults, phases } = spec;
  const facts: [string, string][] = [
    ['source', spec.source],
    ['workers', `${workers.count} worker(s) x ${workers.slots} slot(s), at most ${workers.maxSteps} steps per run, tool timeout ${formatMs(workers.toolTimeoutMs)}`],
    ['tenants', workloadTenants(workload).join(', ')],
  ];
  if (spec.configSwarm !== undefined) {
    const swarm = spec.configSwarm;
    facts.push([
      'configuration',
      `drawn per seed (configSwarm; each seed's draw is its history's first entry, and the settings below are only the file's): queue ${swarm.queue.join(', ') || 'none'}; workers ${swarm.workers.join(', ') || 'none'}; all defaults p=${swarm.allDefaultsProbability}, each default p=${swarm.defaultProbability}, edge p=${swarm.edgeProbability}`,
    ]);
  }
  const arrivals: string[] = [];
  const drawn = drawnPartOf(workload);
  if (drawn?.kind === 'rounds') arrivals.push(`${drawn.count} round(s) of ${drawn.tasksPerRound} task(s), every ${formatMs(drawn.everyMs)}`);
  else if (drawn?.kind === 'topics') arrivals.push(`${drawn.count} topic(s) over ${formatMs(drawn.arrivalWindowMs)}, newer version with p=${drawn.newVersionProbability}`);
  const tasks = explicitTasksOf(workload);
  if (tasks.length > 0) arrivals.push(`${tasks.length} explicit task(s) (${tasks.map((task) => task.label ?? task.topic).slice(0, 8).join(', ')}${tasks.length > 8 ? ', ...' : ''})`);
  for (const flood of floodsOf(workload)) {
    arrivals.push(`flood: ${flood.count ?? 1} ${flood.tenant} task(s) every ${formatMs(flood.everyMs)} from ${formatMs(flood.fromMs)} to ${formatMs(flood.untilMs)}, priority ${flood.priority[0]}-${flood.priority[1]}`);
  }
  facts.push(['workload', arrivals.join('; ') || 'none']);
  const priorities = drawn?.priorities ?? [0, 30];
  facts.push(['priorities', `${priorities[0]}-${priorities[1]}`]);
  const poisonTasks = drawn?.kind === 'rounds' && drawn.poisonTasks > 0 ? drawn.poisonTasks : undefined;
  const { poisonProbability } = workload.scripts;
  if (poisonProbability !== undefined || poisonTasks !== undefined) facts.push(['poison', poisonTasks !== undefined ? `${poisonTasks} task(s)` : `p=${poisonProbability}`]);
  const faultText =
    'plan' in faults
      ? `explicit plan: ${faults.plan.timed.length} timed fault(s), ${faults.plan.points.length} point fault(s)`
      : 'swarm' in faults
        ? `swarm (drawn per seed) of ${faults.swarm.kinds.join(', ')}; quiet with p=${faults.swarm.quietProbability}`
        : `one fault per round, drawn per seed: ${compactJson(faults.perRound as unknown as JsonValue)}`;
  facts.push(['faults', faultText]);
  facts.push(['phases', `safety ${formatMs(phases.safetyMs)}, then liveness up to ${formatMs(phases.livenessMs)}`]);
  const expectations = spec.expect ?? [];
  facts.push(['expectations', expectations.length === 0 ? 'none (invariants only)' : expectations.map((entry) => (entry as { kind?: string }).kind ?? '?').join(', ')]);
  return facts;
}

function compactJson(value: JsonValue): string {
  const text = canonicalJson(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

function distCells(dist: Distribution | null | undefined): string[] {
  if (dist === null || dist === undefined) return ['0', '-', '-', '-'];
  return [String(dist.count), formatMs(dist.p50Ms), formatMs(dist.p95Ms), formatMs(dist.maxMs)];
}

function verdictLine(figures: ReportFigures): string {
  const { verdicts } = figures;
  const failing = figures.seedsRun - verdicts.pass;
  const parts = (['safety', 'liveness', 'nondeterminism'] as const).filter((verdict) => verdicts[verdict] > 0).map((verdict) => `${verdicts[verdict]} ${verdict}`);
  return failing === 0 ? `${figures.seedsRun} seed(s), all pass` : `${figures.seedsRun} seed(s): ${verdicts.pass} pass, ${parts.join(', ')}`;
}

function timelineCaption(report: ScenarioReport): string {
  const timeline = report.figures.timeline;
  if (timeline === null) return 'no timeline (no seed produced a world)';
  const why = timeline.verdict === 'pass' ? 'the first seed' : `the first failing seed (${timeline.verdict})`;
  return `seed ${timeline.seed} (index ${timeline.index}, ${why}); ${timeline.lanes.length - 1} worker incarnation(s), ${timeline.spans.length} lease span(s), ${timeline.markers.length} marker(s), ${formatMs(timeline.endMs)} simulated`;
}

function provenance(report: ScenarioReport): [string, string][] {
  const { git, versions, seeds } = report;
  return [
    ['git commit', git.commit === null ? 'none (not a git checkout)' : `${git.commit}${git.dirty ? ' (with uncommitted changes)' : ''}`],
    ['root seed', `${seeds.root} (${seeds.rootSource === 'flag' ? 'from --seed' : seeds.rootSource === 'git' ? 'from the git commit' : 'no git commit: fixed'})`],
    ['seeds', `${seeds.list.length}: ${seeds.derivation}`],
    ['versions', `leasehold ${versions.leasehold}, node ${versions.node}, better-sqlite3 ${versions.betterSqlite3}, SQLite ${versions.sqlite}, ${versions.platform}`],
    ['rerun', report.command],
  ];
}

function transitionNote(): string {
  return 'Every (from, to) change in the final databases\' event logs, with the event that carried it and the queue operation(s) whose edge records it, summed over all seeds; every edge of the core state machine (src/queue/states.ts) is listed, observed or not. Sorted by from state, then count. (enqueue) is a task\'s first event.';
}

function edgeCells(row: ReportFigures['edges'][number]): string[] {
  const count = row.operations.length === 0 ? `${row.count} (not an edge of the state machine!)` : row.count === 0 ? '0 (never observed)' : String(row.count);
  return [row.from, row.to, row.event, row.operations.join(', ') || '-', count];
}

function admissionNote(): string {
  return 'RUN is a claim that granted (every claimed event). DEFER, REJECT, PAUSE and RESUME come from the queue\'s admission decisions when the run exported them, else from the deferred events, the enqueued events whose admission was a DEFER, and the rejections. Summed over all seeds.';
}

/** Tenants shown as columns of the admission table; more go into one cell. */
const TENANT_COLUMNS = 6;

export function admissionTable(figures: Pick<ReportFigures, 'admission'>): { header: string[]; rows: string[][] } {
  const tenants = [...new Set(figures.admission.flatMap((row) => Object.keys(row.byTenant)))].sort();
  const columns = tenants.length <= TENANT_COLUMNS;
  const header = ['action', 'reason', 'count', ...(columns ? tenants : ['by tenant'])];
  const rows = figures.admission.map((row) => [
    row.action,
    row.reason,
    String(row.count),
    ...(columns ? tenants.map((tenant) => String(own(row.byTenant, tenant) ?? 0)) : [Object.entries(row.byTenant).map(([tenant, count]) => `${tenant} ${count}`).join(', ')]),
  ]);
  return { header, rows };
}

function admissionSummary(figures: ReportFigures): string | undefined {
  if (figures.admission.length === 0) return 'No admission decisions: no task was claimed, deferred or rejected in any seed.';
  if (!figures.admission.some((row) => row.action !== 'RUN')) return 'No DEFER, REJECT or pause in any seed: every admission was a RUN.';
  return undefined;
}

function budgetConfig(spec: ReportFigures['budgets']['specs'][string]): string {
  if (spec.kind === 'concurrency') return `concurrency, limit ${spec.limit}, scope ${spec.scope ?? 'global'}`;
  if (spec.kind === 'rate') return `rate, capacity ${spec.capacity}, refill ${spec.refill} per ${formatMs(spec.periodMs)}, scope ${spec.scope ?? 'global'}${spec.meter === undefined ? '' : `, meter ${spec.meter}`}`;
  return `total, limit ${spec.limit} per ${spec.per}${spec.meter === undefined ? '' : `, meter ${spec.meter}`}`;
}

function budgetRows(figures: ReportFigures): string[][] {
  return Object.entries(figures.budgets.specs).map(([name, spec]) => {
    const peak = figures.budgets.peaks.find((row) => row.budget === name);
    if (peak === undefined || peak.scopes === 0) return [name, budgetConfig(spec), '0', '-', '-', '0', '0'];
    const extreme =
      peak.kind === 'rate'
        ? `lowest ${peak.peak} of ${peak.limit}`
        : peak.kind === 'total'
          ? `max used/limit over ${spec.kind === 'total' && spec.per === 'session' ? 'sessions' : 'runs'} ${peak.peak}/${peak.limit} (${Math.round((100 * peak.peak) / Math.max(1, peak.limit))}%)`
          : `most held ${peak.peak} of ${peak.limit}`;
    const atLimit = peak.kind === 'rate' ? `${peak.atLimit} went empty` : `${peak.atLimit} reached the limit`;
    return [name, budgetConfig(spec), String(peak.scopes), extreme, atLimit, `${peak.grants} (${peak.unitsGranted} units)`, String(peak.overdrafts)];
  });
}

const BUDGET_HEADER = ['budget', 'configuration', 'scopes moved', 'extreme', 'scopes at the limit', 'grants', 'overdrafts'];

function budgetNote(): string {
  return 'Replayed from the event logs with the SPEC\'s integer rules (sim/report/budget-series.ts): grants from claimed and budget_reserved data.reserved, overdrafts from checkpoints, returns from data.released on the edge that frees the slot. Scopes, extremes and grants over all seeds.';
}

function plotTitle(plot: BudgetPlot): string {
  return `${describeScope(plot.budget, plot.scope)}, seed ${plot.seed}`;
}

/** Budgets configured that no event of any seed moved. */
function idleBudgets(figures: ReportFigures): string[] {
  return Object.keys(figures.budgets.specs).filter((name) => (figures.budgets.peaks.find((row) => row.budget === name)?.scopes ?? 0) === 0);
}

function plotsNote(figures: ReportFigures): string {
  const plots = figures.budgets.plots;
  const idle = idleBudgets(figures);
  if (idle.length === Object.keys(figures.budgets.specs).length) return 'No level plot: no task needed any budget, so no unit moved in any seed.';
  const idleNote = idle.length === 0 ? '' : ` Not drawn, no unit moved in any seed: ${idle.join(', ')}.`;
  if (plots.length === 0) return `No level plot: no concurrency or rate budget moved in the drawn seed (a total has one level per run or session: see its max used/limit above).${idleNote}`;
  const first = plots[0]!;
  return `Levels over the queue clock in seed ${first.seed} (index ${first.index}), one plot per concurrency or rate budget and scope it moved, whole units (a rate bucket's level rounded down, as budgetLevels() reports it); time from the run's start.${idleNote}`;
}

// ---------------------------------------------------------------------------------------------------
// Markdown

function mdTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [`| ${header.map(cell).join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`)].join('\n');
}

function mdDistributions(rows: readonly LabelledDistribution[], first: string): string {
  if (rows.length === 0) return '_no samples_';
  return mdTable([first, 'tasks', 'p50', 'p95', 'max'], rows.map((row) => [row.label, ...distCells(row)]));
}

export function renderMarkdown(report: ScenarioReport): string {
  const { figures, scenario } = report;
  const out: string[] = [];
  out.push(`# leasehold report: ${scenario.name}`, '', scenario.description, '', `**${verdictLine(figures)}**`, '');
  out.push(mdTable(['', ''], provenance(report)), '');
  out.push('## Scenario and configuration', '');
  out.push(mdTable(['', ''], [...(scenario.file === null ? [] : [['file', scenario.file] as [string, string]]), ...scenarioFacts(scenario.spec)]), '');
  out.push('Queue configuration in force (the scenario over the defaults):', '');
  out.push(mdTable(['setting', 'value'], Object.entries(scenario.queueConfig).map(([key, value]) => [key, typeof value === 'object' ? JSON.stringify(value) : String(value)])), '');
  out.push('The full scenario is in report.json (`scenario.spec`).', '');

  out.push('## Verdict per seed', '');
  out.push(mdTable(['#', 'seed', 'verdict', 'trace hash', 'tasks', 'simulated', 'first violation'], figures.seeds.map((row) => [String(row.index), row.seed, row.verdict, row.traceHash.slice(0, 12), String(row.tasks), formatMs(row.simulatedMs), row.reason])), '');
  const failing = figures.seeds.filter((row) => row.verdict !== 'pass');
  if (failing.length > 0) {
    out.push('Replay a failing seed:', '', '```');
    for (const row of failing) out.push(report.replays[row.seed] ?? '');
    out.push('```', '');
  }

  out.push('## State transitions', '', transitionNote(), '');
  out.push(mdTable(['from', 'to', 'event', 'operation', 'count'], figures.edges.map(edgeCells)), '');
  const finals = Object.entries(figures.finalStates).filter(([, count]) => count > 0);
  out.push(`Final states: ${finals.map(([state, count]) => `${state} ${count}`).join(', ') || 'none'}.`, '');

  out.push('## Wait time (enqueue to first claim)', '');
  out.push(mdTable(['', 'tasks', 'p50', 'p95', 'max'], [['all', ...distCells(figures.wait.overall)]]), '');
  out.push('By priority:', '', mdDistributions(figures.wait.byPriority, 'priority'), '');
  out.push('By tenant:', '', mdDistributions(figures.wait.byTenant, 'tenant'), '');
  const never = Object.entries(figures.wait.neverClaimed);
  if (never.length > 0) out.push(`Never claimed (no wait sample): ${never.map(([state, count]) => `${state} ${count}`).join(', ')}.`, '');
  out.push('Histogram:', '', mdTable(['wait', 'tasks'], figures.wait.histogram.filter((bin) => bin.count > 0).map((bin) => [bin.toMs === null ? `>= ${formatMs(bin.fromMs)}` : `${formatMs(bin.fromMs)} to < ${formatMs(bin.toMs)}`, String(bin.count)])), '');

  out.push('## Run time (claim to result, last attempt)', '');
  out.push(mdTable(['', 'tasks', 'p50', 'p95', 'max'], [['all', ...distCells(figures.runTime.overall)]]), '');
  out.push('By priority:', '', mdDistributions(figures.runTime.byPriority, 'priority'), '');
  out.push('By tenant:', '', mdDistributions(figures.runTime.byTenant, 'tenant'), '');

  out.push('## Takeover latency (kill to the next generation resuming)', '');
  out.push(mdTable(['', 'takeovers', 'p50', 'p95', 'max'], [['all', ...distCells(figures.takeover.all)], ['resumed from a checkpoint', ...distCells(figures.takeover.resumed)]]), '');

  out.push('## Retries by reason', '', figures.retries.length === 0 ? '_none_' : mdTable(['reason', 'count'], figures.retries.map(([reason, count]) => [reason, String(count)])), '');
  out.push('## Failures by reason', '', figures.failures.length === 0 ? '_none_' : mdTable(['reason', 'count'], figures.failures.map(([reason, count]) => [reason, String(count)])), '');
  out.push('## Rejections by reason', '', 'Every refused operation in the histories (an idle `claim` that found nothing is not counted; `claim: quota` is a claim deferred by Q6 quotas).', '');
  out.push(figures.rejections.length === 0 ? '_none_' : mdTable(['operation', 'reason', 'count'], figures.rejections.map((row) => [row.op, row.reason, String(row.count)])), '');

  out.push('## Admission decisions by reason', '', admissionNote(), '');
  const summary = admissionSummary(figures);
  if (summary !== undefined) out.push(summary, '');
  if (figures.admission.length > 0) {
    const table = admissionTable(figures);
    out.push(mdTable(table.header, table.rows), '');
  }

  out.push('## Budget levels', '');
  if (Object.keys(figures.budgets.specs).length === 0) out.push('No budgets configured (queue.budgets is empty).', '');
  else {
    out.push(budgetNote(), '', mdTable(BUDGET_HEADER, budgetRows(figures)), '');
    out.push(`${plotsNote(figures)}${figures.budgets.plots.length === 0 ? '' : ' Drawn in index.html:'}`, '');
    if (figures.budgets.plots.length > 0) out.push(mdTable(['plot', 'level changes', 'lowest', 'highest', 'limit'], figures.budgets.plots.map((plot) => [plotTitle(plot), String(plot.points.length - 1), String(Math.min(...plot.points.map((point) => point.level))), String(Math.max(...plot.points.map((point) => point.level))), String(plot.limit)])), '');
  }

  const { settlements, effects } = figures;
  out.push('## Settlements and effects', '');
  out.push(
    mdTable(
      ['', 'count'],
      [
        ['holds written', String(settlements.holds)],
        ['settled', String(settlements.settled)],
        ['released', String(settlements.released)],
        ['still held', String(settlements.stillHeld)],
        ['credits held / charged', `${settlements.heldCredits} / ${settlements.chargedCredits}`],
        ['effect ledger entries', String(effects.ledger)],
        ['provider executions / requests', `${effects.providerExecutions} / ${effects.providerRequests}`],
        ['dead letters', String(effects.deadLetters)],
      ],
    ),
    '',
  );

  out.push('## Coverage marks', '', 'Summed over seeds, with the number of seeds that reached each.', '');
  out.push(mdTable(['mark', 'total', 'seeds'], figures.marks.map((row) => [row.mark, String(row.total), String(row.seeds)])), '');

  out.push('## Timeline', '', `${timelineCaption(report)}. Drawn in index.html.`, '');
  const graphs = figures.timeline?.graphs ?? [];
  if (graphs.length > 0) out.push('## Tool-call graphs', '', `Seed ${figures.timeline!.seed}. ${toolGraphMarkdown(graphs)}`);
  const charts = figures.timeline?.tenantCharts;
  if (charts?.fairShare !== undefined) {
    const fair = charts.fairShare;
    out.push('## Fair share', '', `Seed ${figures.timeline!.seed}. ${fairShareNote(fair)} Drawn in index.html.`, '');
    out.push(mdTable(['tenant', 'weight', 'slot limit', 'weighted service at the end'], fair.tenants.map((row) => [row.tenant, String(row.weight), String(row.limit), formatCount(Math.round(row.points[row.points.length - 1]?.value ?? 0))])), '');
  }
  if (charts !== undefined) {
    out.push('## Depth per tenant', '', `Seed ${figures.timeline!.seed}: tasks waiting (ready) per tenant over the queue clock. Drawn in index.html.`, '');
    out.push(mdTable(['tenant', 'most waiting', 'waiting at the end'], charts.depth.map((row) => [row.tenant, String(Math.max(0, ...row.points.map((point) => point.value))), String(row.points[row.points.length - 1]?.value ?? 0)])), '');
  }
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------
// HTML

export const REPORT_CSS = `
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; margin: 24px 32px; color: #1d232a; background: #fff; max-width: 1400px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h3 { font-size: 14px; margin: 12px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #dde2e8; padding-bottom: 4px; }
p.lead { margin: 0 0 12px; color: #4a5561; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #dde2e8; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.zero td { color: #9aa3ad; }
tr.illegal td { background: #fde2e2; }
table.kv th { width: 170px; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
pre { background: #f6f8fa; padding: 8px 10px; overflow-x: auto; border-radius: 4px; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 10px; font-weight: 600; font-size: 14px; }
.badge.pass { background: #dff3e4; color: #17672e; }
.badge.fail { background: #fde2e2; color: #9b1c1c; }
.violation { border-left: 4px solid #9b1c1c; background: #fff6f6; padding: 4px 12px; margin: 0 0 12px; }
.violation p { margin: 6px 0; }
.violation pre { white-space: pre-wrap; word-break: break-word; }
.v-pass { color: #17672e; }
.v-safety, .v-liveness, .v-nondeterminism { color: #9b1c1c; font-weight: 600; }
.grid { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.figure { overflow-x: auto; border: 1px solid #dde2e8; border-radius: 6px; padding: 8px; background: #fff; }
details summary { cursor: pointer; color: #245; }
.small { font-size: 12px; color: #5b6671; }
nav a { margin-right: 12px; }
`;

function htmlTable(header: readonly string[], rows: readonly { cells: readonly string[]; className?: string }[], numeric: readonly number[] = []): string {
  const head = `<tr>${header.map((cell) => `<th>${esc(cell)}</th>`).join('')}</tr>`;
  const body = rows
    .map((row) => `<tr${row.className === undefined ? '' : ` class="${row.className}"`}>${row.cells.map((cell, index) => `<td${numeric.includes(index) ? ' class="num"' : ''}>${cell}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table>\n${head}\n${body}\n</table>`;
}

function kvTable(rows: readonly [string, string][]): string {
  return `<table class="kv">${rows.map(([key, value]) => `<tr><th>${esc(key)}</th><td>${esc(value)}</td></tr>`).join('')}</table>`;
}

/** One figure as a table overall, then side by side by priority band and by tenant. */
function distByPriorityAndTenant(figure: { overall: Distribution | null; byPriority: readonly LabelledDistribution[]; byTenant: readonly LabelledDistribution[] }): string[] {
  return [
    distTable('', [{ label: 'all', dist: figure.overall }]),
    '<div class="grid"><div><h3>By priority</h3>',
    distTable('priority', figure.byPriority.map((row) => ({ label: row.label, dist: row }))),
    '</div><div><h3>By tenant</h3>',
    distTable('tenant', figure.byTenant.map((row) => ({ label: row.label, dist: row }))),
    '</div></div>',
  ];
}

function distTable(first: string, rows: readonly { label: string; dist: Distribution | null }[]): string {
  if (rows.length === 0) return '<p class="small">no samples</p>';
  return htmlTable([first, 'tasks', 'p50', 'p95', 'max'], rows.map((row) => ({ cells: [esc(row.label), ...distCells(row.dist).map(esc)] })), [1, 2, 3, 4]);
}

export function renderHtml(report: ScenarioReport, links: { catalogue?: string } = {}): string {
  const { figures, scenario } = report;
  const failing = figures.seeds.filter((row) => row.verdict !== 'pass');
  const body: string[] = [];
  if (links.catalogue !== undefined) body.push(`<nav><a href="${esc(links.catalogue)}">&larr; catalogue</a></nav>`);
  body.push(`<h1>leasehold report: ${esc(scenario.name)}</h1>`);
  body.push(`<p class="lead">${esc(scenario.description)}</p>`);
  body.push(`<p><span class="badge ${failing.length === 0 ? 'pass' : 'fail'}">${esc(verdictLine(figures))}</span></p>`);
  if (failing.length > 0) {
    // The violation right under the badge (issue 34): what failed, where, and how to replay it.
    const first = failing[0]!;
    const violation = first.violations[0];
    const what = violation === undefined ? first.reason : `${violation.invariant} (${violation.kind}): ${violation.message}`;
    body.push(`<div class="violation" id="first-violation"><p><strong>First violation</strong>, seed ${esc(first.seed)} (index ${esc(first.index)}, ${esc(first.verdict)}${first.violations.length > 1 ? `, ${esc(first.violations.length)} violations kept` : ''}):</p><pre>${esc(what)}</pre><p>Replay the first failing seed:</p><pre>${esc(report.replays[first.seed] ?? '')}</pre></div>`);
  }
  body.push(kvTable(provenance(report)));

  body.push('<h2 id="timeline">Timeline</h2>');
  if (figures.timeline === null) body.push('<p class="small">No timeline: no seed produced a world.</p>');
  else {
    body.push(`<p class="small">${esc(timelineCaption(report))}. Lanes are worker incarnations (a revived worker is a new lane); each bar is a lease from claim to the event that ended it, coloured by the task's generation. Hover for details.</p>`);
    body.push(`<div class="figure">${timelineSvg(figures.timeline, `Timeline of ${scenario.name} seed ${figures.timeline.seed}`)}</div>`);
    const graphs = figures.timeline.graphs ?? [];
    if (graphs.length > 0) {
      body.push('<h2 id="tool-graphs">Tool-call graphs</h2>');
      body.push(`<p class="small">Seed ${esc(figures.timeline.seed)}: each step whose tool calls form a graph (A7), per generation that ran it. A row per call, grouped by topological layer (L0 first); each bar runs from the tool's call to its answer (green ok, red a failure, teal a write answered from the effect ledger, grey never answered). Hover for details.</p>`);
      for (const run of graphs) body.push(`<div class="figure">${toolGraphSvg(run)}</div>`);
    }
  }

  const charts = figures.timeline?.tenantCharts;
  if (charts !== undefined) body.push(...tenantChartsHtml(charts, figures.timeline!.seed));

  body.push('<h2 id="scenario">Scenario and configuration</h2>');
  body.push(kvTable([...(scenario.file === null ? [] : [['file', scenario.file] as [string, string]]), ...scenarioFacts(scenario.spec)]));
  body.push('<details><summary>Queue configuration in force</summary>');
  body.push(kvTable(Object.entries(scenario.queueConfig).map(([key, value]) => [key, typeof value === 'object' ? JSON.stringify(value) : String(value)])));
  body.push('</details>');
  body.push(`<details><summary>The scenario as data</summary><pre>${esc(JSON.stringify(scenario.spec, null, 2))}</pre></details>`);

  body.push('<h2 id="verdicts">Verdict per seed</h2>');
  body.push(
    htmlTable(
      ['#', 'seed', 'verdict', 'trace hash', 'tasks', 'simulated', 'first violation / replay'],
      figures.seeds.map((row) => ({
        cells: [
          String(row.index),
          esc(row.seed),
          `<span class="v-${row.verdict}">${esc(row.verdict)}</span>`,
          `<code>${esc(row.traceHash.slice(0, 12))}</code>`,
          String(row.tasks),
          esc(formatMs(row.simulatedMs)),
          row.verdict === 'pass' ? '' : `${esc(row.reason)}<br><code>${esc(report.replays[row.seed] ?? '')}</code>`,
        ],
      })),
      [0, 4, 5],
    ),
  );

  body.push('<h2 id="transitions">State transitions</h2>');
  body.push(`<p class="small">${esc(transitionNote())}</p>`);
  body.push(
    htmlTable(
      ['from', 'to', 'event', 'operation', 'count'],
      figures.edges.map((row) => ({
        cells: edgeCells(row).map(esc),
        ...(row.operations.length === 0 ? { className: 'illegal' } : row.count === 0 ? { className: 'zero' } : {}),
      })),
      [4],
    ),
  );
  const finals = Object.entries(figures.finalStates).filter(([, count]) => count > 0);
  body.push(`<p class="small">Final states: ${esc(finals.map(([state, count]) => `${state} ${count}`).join(', ') || 'none')}.</p>`);

  body.push('<h2 id="wait">Wait time (enqueue to first claim)</h2>');
  body.push(...distByPriorityAndTenant(figures.wait));
  const never = Object.entries(figures.wait.neverClaimed);
  if (never.length > 0) body.push(`<p class="small">Never claimed (no wait sample): ${esc(never.map(([state, count]) => `${state} ${count}`).join(', '))}.</p>`);
  body.push(`<div class="figure">${histogramSvg(figures.wait.histogramByPriority, `Wait time histogram of ${scenario.name}`)}</div>`);

  body.push('<h2 id="runtime">Run time (claim to result, last attempt)</h2>');
  body.push(...distByPriorityAndTenant(figures.runTime));

  body.push('<h2 id="takeover">Takeover latency (kill to the next generation resuming)</h2>');
  body.push(distTable('', [{ label: 'all takeovers', dist: figures.takeover.all }, { label: 'resumed from a checkpoint', dist: figures.takeover.resumed }]));

  const counts = (rows: readonly [string, number][]) => (rows.length === 0 ? '<p class="small">none</p>' : htmlTable(['reason', 'count'], rows.map(([reason, count]) => ({ cells: [esc(reason), String(count)] })), [1]));
  body.push('<div class="grid"><div><h2 id="retries">Retries by reason</h2>', counts(figures.retries), '</div>');
  body.push('<div><h2 id="failures">Failures by reason</h2>', counts(figures.failures), '</div>');
  body.push('<div><h2 id="rejections">Rejections by reason</h2>');
  body.push('<p class="small">Refused operations (an idle claim is not counted; <code>claim: quota</code> is a claim deferred by the Q6 quotas).</p>');
  body.push(figures.rejections.length === 0 ? '<p class="small">none</p>' : htmlTable(['operation', 'reason', 'count'], figures.rejections.map((row) => ({ cells: [esc(row.op), esc(row.reason), String(row.count)] })), [2]));
  body.push('</div></div>');

  body.push('<h2 id="admission">Admission decisions by reason</h2>');
  body.push(`<p class="small">${esc(admissionNote())}</p>`);
  const summary = admissionSummary(figures);
  if (summary !== undefined) body.push(`<p>${esc(summary)}</p>`);
  if (figures.admission.length > 0) {
    const table = admissionTable(figures);
    body.push(htmlTable(table.header, table.rows.map((cells) => ({ cells: cells.map(esc) })), table.header.map((_, index) => index).filter((index) => index >= 2)));
  }

  body.push('<h2 id="budgets">Budget levels</h2>');
  if (Object.keys(figures.budgets.specs).length === 0) body.push('<p>No budgets configured (queue.budgets is empty).</p>');
  else {
    body.push(`<p class="small">${esc(budgetNote())}</p>`);
    body.push(htmlTable(BUDGET_HEADER, budgetRows(figures).map((cells) => ({ cells: cells.map(esc) })), [2]));
    body.push(`<p class="small">${esc(plotsNote(figures))}</p>`);
    if (figures.budgets.plots.length > 0) body.push(`<div class="grid">${figures.budgets.plots.map((plot) => `<div class="figure">${budgetPlotSvg(plot, plotTitle(plot))}</div>`).join('\n')}</div>`);
  }

  const { settlements, effects } = figures;
  body.push('<h2 id="settlements">Settlements and effects</h2>');
  body.push(
    htmlTable(
      ['', 'count'],
      [
        ['holds written', settlements.holds],
        ['settled', settlements.settled],
        ['released', settlements.released],
        ['still held', settlements.stillHeld],
        ['credits held / charged', `${settlements.heldCredits} / ${settlements.chargedCredits}`],
        ['effect ledger entries', effects.ledger],
        ['provider executions / requests', `${effects.providerExecutions} / ${effects.providerRequests}`],
        ['dead letters', effects.deadLetters],
      ].map(([label, value]) => ({ cells: [esc(String(label)), esc(String(value))] })),
      [1],
    ),
  );

  body.push('<h2 id="marks">Coverage marks</h2>');
  body.push('<p class="small">Summed over seeds, with the number of seeds that reached each (S8).</p>');
  body.push(htmlTable(['mark', 'total', 'seeds'], figures.marks.map((row) => ({ cells: [esc(row.mark), String(row.total), String(row.seeds)], ...(row.total === 0 ? { className: 'zero' } : {}) })), [1, 2]));

  return htmlPage(`leasehold report: ${scenario.name}`, body.join('\n'));
}

function fairShareNote(fair: NonNullable<TenantCharts['fairShare']>): string {
  return `Each tenant's cumulative service divided by its weight (model tokens, I19's books: reserved at claim, corrected to the checkpointed use when the slot is freed, a tenant back from idle raised to the least served active tenant). The dashed line is the bound's fixed term, ${formatCount(fair.bound)} weighted tokens (the largest over pairs of fairShareBound(C, L_a, w_a, L_b, w_b) / (w_a x w_b), C = ${fair.maxCharge} tokens, the most one run was charged): while two tenants are both backlogged and eligible, their weighted services may drift apart by at most that much beyond the gap they had when the interval began.`;
}

/** The fair-share plot (under fairness fair_share) and the depth per tenant of the drawn seed. */
function tenantChartsHtml(charts: TenantCharts, seed: string): string[] {
  const out: string[] = [];
  const fair = charts.fairShare;
  if (fair !== undefined) {
    out.push('<h2 id="fair-share">Fair share</h2>');
    out.push(`<p class="small">Seed ${esc(seed)}. ${esc(fairShareNote(fair))}</p>`);
    out.push(
      htmlTable(
        ['tenant', 'weight', 'slot limit', 'service at the end', 'weighted'],
        fair.tenants.map((row) => {
          const last = row.points[row.points.length - 1]?.value ?? 0;
          return { cells: [esc(row.tenant), esc(row.weight), esc(row.limit), esc(Math.round(last * row.weight)), esc(formatCount(Math.round(last)))] };
        }),
        [1, 2, 3, 4],
      ),
    );
    const series = fair.tenants.map((row) => ({ label: `${row.tenant} (w ${row.weight})`, points: row.points }));
    const gap = fair.tenants.length < 2 ? [] : [{ label: 'gap among tenants with work waiting', points: gapPoints(fair.tenants, charts.depth) }];
    out.push(
      `<div class="grid"><div class="figure">${seriesChartSvg({ className: 'fair-share-plot', title: 'Weighted service per tenant (S / w)', caption: 'model tokens / weight, cumulative', yTitle: 'tokens / w', fromMs: charts.fromMs, toMs: charts.toMs, series })}</div>` +
        `<div class="figure">${seriesChartSvg({ className: 'fair-share-gap-plot', title: 'Gap between tenants, with the bound', caption: 'max - min of S / w over the tenants with ready work; dashed: the bound\'s fixed term', yTitle: 'tokens / w', fromMs: charts.fromMs, toMs: charts.toMs, series: gap, line: { value: fair.bound, label: `bound ${formatCount(fair.bound)} (C ${formatCount(fair.maxCharge)})` } })}</div></div>`,
    );
  }
  out.push('<h2 id="depth">Depth per tenant</h2>');
  out.push(`<p class="small">Seed ${esc(seed)}: tasks waiting (ready) per tenant over the queue clock, replayed from the event log${charts.depthOmitted > 0 ? `; ${esc(charts.depthOmitted)} more tenant(s) left out` : ''}.</p>`);
  out.push(`<div class="figure">${seriesChartSvg({ className: 'depth-plot', title: 'Tasks waiting per tenant', caption: 'ready tasks, by tenant', yTitle: 'tasks', fromMs: charts.fromMs, toMs: charts.toMs, series: charts.depth.map((row) => ({ label: row.tenant, points: row.points })), width: 900 })}</div>`);
  return out;
}

/**
 * The spread (most minus least weighted service) among the tenants with work waiting at each instant
 * (depth > 0; 0 while fewer than two have), after every change of either series.
 */
export function gapPoints(tenants: readonly { tenant: string; points: readonly { at: number; value: number }[] }[], depth: readonly { tenant: string; points: readonly { at: number; value: number }[] }[]): { at: number; value: number }[] {
  const waitingOf = new Map(depth.map((row) => [row.tenant, row.points]));
  const moves = tenants.flatMap((row, index) => [
    ...row.points.map((point) => ({ at: point.at, index, service: point.value })),
    ...(waitingOf.get(row.tenant) ?? []).map((point) => ({ at: point.at, index, waiting: point.value })),
  ]);
  moves.sort((a, b) => a.at - b.at);
  const service = tenants.map(() => 0);
  const waiting = tenants.map(() => 0);
  const out: { at: number; value: number }[] = [];
  for (const move of moves) {
    if ('service' in move) service[move.index] = move.service;
    else waiting[move.index] = move.waiting;
    const backlogged = service.filter((_, index) => waiting[index]! > 0);
    const value = backlogged.length < 2 ? 0 : Math.max(...backlogged) - Math.min(...backlogged);
    const last = out[out.length - 1];
    if (last !== undefined && last.at === move.at) last.value = value;
    else if (last === undefined || last.value !== value) out.push({ at: move.at, value });
  }
  return out;
}

export function htmlPage(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>${esc(title)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
${body}
</body>
</html>
`;
}
