import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { budgetPhrase } from '../check/budget.ts';
import { bailLine } from '../check/bail.ts';
import { replayFileCommand } from '../check/counterexample.ts';
import type { CheckOutcome } from '../check/report.ts';
import { totalOf } from '../check/tally.ts';
import { seedsOf } from '../check/types.ts';
import { versions as readVersions } from '../check/versions.ts';
import { commandLine } from '../cli/shell-quote.ts';
import type { ReportAggregator } from './aggregate.ts';
import { scenarioReport, type ScenarioReport } from './document.ts';
import { htmlPage } from './render.ts';
import { reportDirName, writeScenarioReport } from './run-report.ts';
import { formatMs } from './stats.ts';
import { esc } from './svg.ts';

/**
 * The catalogue report of a check run with --report (what `npm start` writes into reports/latest/):
 * one scenario report per scenario in DIR/<scenario>/, from the very seeds the check ran (the threads
 * digested each run as it finished), and DIR/index.html (and index.md) linking them.
 */
export function writeCatalogueReport(outDir: string, outcome: CheckOutcome, aggregators: ReadonlyMap<string, ReportAggregator>): { html: string; markdown: string; reports: ScenarioReport[] } {
  const { request } = outcome;
  const versions = readVersions();
  const reports: ScenarioReport[] = [];
  for (const source of request.sources) {
    const aggregator = aggregators.get(source.name);
    if (aggregator === undefined || aggregator.count === 0) continue;
    const command = commandLine([
      'leasehold',
      'report',
      '--scenario',
      source.file ?? source.name,
      '--seeds',
      String(seedsOf(request, source.name)),
      '--seed',
      request.root.seed,
    ]);
    const report = scenarioReport({ source, root: request.root, git: request.git, versions, command }, aggregator.figures());
    // A failing seed with a counterexample file replays from the file (it carries the plan and the versions).
    for (const written of outcome.written) {
      if (written.result.job.scenario === source.name && report.replays[written.result.job.seed] !== undefined) report.replays[written.result.job.seed] = replayFileCommand(written.file);
    }
    writeScenarioReport(join(outDir, reportDirName(source.name)), report, { catalogue: '../index.html' });
    reports.push(report);
  }
  mkdirSync(outDir, { recursive: true });
  const html = join(outDir, 'index.html');
  const markdown = join(outDir, 'index.md');
  writeFileSync(html, catalogueHtml(outcome, reports));
  writeFileSync(markdown, catalogueMarkdown(outcome, reports));
  return { html, markdown, reports };
}

interface Row {
  report: ScenarioReport;
  verdict: string;
  failing: number;
}

function rows(reports: readonly ScenarioReport[]): Row[] {
  return reports.map((report) => {
    const { verdicts, seedsRun } = report.figures;
    const failing = seedsRun - verdicts.pass;
    const parts = (['safety', 'liveness', 'nondeterminism'] as const).filter((verdict) => verdicts[verdict] > 0).map((verdict) => `${verdicts[verdict]} ${verdict}`);
    return { report, failing, verdict: failing === 0 ? `${seedsRun} pass` : `${verdicts.pass} pass, ${parts.join(', ')}` };
  });
}

function resultLine(outcome: CheckOutcome): string {
  const total = totalOf(outcome.counted.scenarios);
  if (outcome.exitCode === 0) return `pass (exit 0): ${total.seeds} seeds over ${outcome.request.sources.length} scenario(s), every invariant held`;
  return `FAIL (exit ${outcome.exitCode}): ${total.safety} safety, ${total.liveness} liveness, ${total.nondeterminism} nondeterministic or crashed seed(s)`;
}

function coverageText(outcome: CheckOutcome): string {
  const { coverage } = outcome;
  if (!coverage.enforced) return `required coverage marks not applied: ${coverage.reason}`;
  return coverage.missing.length === 0 ? `all ${coverage.required.length} required coverage marks reached` : `required coverage marks never reached: ${coverage.missing.join(', ')}`;
}

function provenanceRows(outcome: CheckOutcome): [string, string][] {
  const { request } = outcome;
  const v = readVersions();
  const stopped = bailLine(outcome.bail);
  return [
    ['result', resultLine(outcome)],
    ...(stopped === undefined ? [] : [['stopped early', stopped] as [string, string]]),
    ['coverage (S8)', coverageText(outcome)],
    ['git commit', request.git.commit === undefined ? 'none (not a git checkout)' : `${request.git.commit}${request.git.dirty ? ' (with uncommitted changes)' : ''}`],
    ['root seed', `${request.root.seed} (${request.root.source}); ${budgetPhrase(request.seedsPerScenario, request.split)}${request.shard === undefined ? '' : `, shard ${request.shard.index}/${request.shard.count}`}`],
    ['versions', `leasehold ${v.leasehold}, node ${v.node}, better-sqlite3 ${v.betterSqlite3}, SQLite ${v.sqlite}, ${v.platform}`],
    ['rerun', request.reproduce],
    ['wall time', `${formatMs(outcome.wallMs)} on ${outcome.threadsUsed} thread(s)`],
  ];
}

function catalogueHtml(outcome: CheckOutcome, reports: readonly ScenarioReport[]): string {
  const body: string[] = [];
  const failing = outcome.exitCode !== 0;
  body.push('<h1>leasehold: the scenario catalogue</h1>');
  body.push('<p class="lead">Every catalogue scenario checked over many seeds (<code>leasehold check</code>, the run behind <code>npm start</code>); each row links that scenario\'s report, built from the same seeds.</p>');
  body.push(`<p><span class="badge ${failing ? 'fail' : 'pass'}">${esc(resultLine(outcome))}</span></p>`);
  body.push(`<table class="kv">${provenanceRows(outcome).map(([key, value]) => `<tr><th>${esc(key)}</th><td>${esc(value)}</td></tr>`).join('')}</table>`);
  body.push('<p class="small">Also here: <a href="summary.json">summary.json</a> (the check\'s machine-readable summary)' + (outcome.written.length > 0 ? ' and the counterexample files in <a href="failures/">failures/</a>' : '') + '; each report has report.md and report.json beside its index.html.</p>');
  body.push('<h2>Scenarios</h2>');
  body.push('<table><tr><th>scenario</th><th>what it exercises</th><th>seed article</th><th>seeds</th><th>verdicts</th><th>wait p95</th><th>takeovers</th><th>marks reached</th><th>timeline</th></tr>');
  for (const row of rows(reports)) {
    const { report } = row;
    const name = report.scenario.name;
    const reached = report.figures.marks.filter((mark) => mark.total > 0).length;
    const timeline = report.figures.timeline;
    body.push(
      `<tr><td><a href="${esc(reportDirName(name))}/index.html"><b>${esc(name)}</b></a></td><td>${esc(report.scenario.description)}</td><td>${esc(report.scenario.source)}</td><td class="num">${report.figures.seedsRun}</td>` +
        `<td class="${row.failing === 0 ? 'v-pass' : 'v-safety'}">${esc(row.verdict)}</td><td class="num">${esc(formatMs(report.figures.wait.overall?.p95Ms))}</td><td class="num">${report.figures.takeover.samples}</td>` +
        `<td class="num">${reached} / ${report.figures.marks.length}</td><td>${timeline === null ? '-' : `<a href="${esc(reportDirName(name))}/index.html#timeline">seed ${esc(timeline.seed)}</a>`}</td></tr>`,
    );
  }
  body.push('</table>');
  const failures = reports.flatMap((report) => report.figures.seeds.filter((seed) => seed.verdict !== 'pass').slice(0, 3).map((seed) => ({ report, seed })));
  if (failures.length > 0) {
    body.push('<h2>Failing seeds</h2><p class="small">The first three per scenario; every one is listed in its scenario\'s report.</p><table><tr><th>scenario</th><th>seed</th><th>verdict</th><th>first violation</th><th>replay</th></tr>');
    for (const { report, seed } of failures) {
      body.push(`<tr><td>${esc(report.scenario.name)}</td><td>${esc(seed.seed)}</td><td class="v-${seed.verdict}">${esc(seed.verdict)}</td><td>${esc(seed.reason)}</td><td><code>${esc(report.replays[seed.seed] ?? '')}</code></td></tr>`);
    }
    body.push('</table>');
  }
  return htmlPage('leasehold: the scenario catalogue', body.join('\n'));
}

function catalogueMarkdown(outcome: CheckOutcome, reports: readonly ScenarioReport[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const lines = ['# leasehold: the scenario catalogue', '', `**${resultLine(outcome)}**`, '', '| | |', '|---|---|'];
  for (const [key, value] of provenanceRows(outcome)) lines.push(`| ${key} | ${cell(value)} |`);
  lines.push('', '| scenario | seeds | verdicts | wait p95 | takeovers | report |', '|---|---|---|---|---|---|');
  for (const row of rows(reports)) {
    const name = row.report.scenario.name;
    lines.push(`| ${name} | ${row.report.figures.seedsRun} | ${row.verdict} | ${formatMs(row.report.figures.wait.overall?.p95Ms)} | ${row.report.figures.takeover.samples} | [${reportDirName(name)}/report.md](${reportDirName(name)}/report.md), [html](${reportDirName(name)}/index.html) |`);
  }
  return `${lines.join('\n')}\n`;
}
