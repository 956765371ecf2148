import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runPool, type ThreadDeath } from '../check/pool.ts';
import { Progress, type ProgressSink } from '../check/progress.ts';
import { runJob } from '../check/run-job.ts';
import type { ScenarioSource } from '../check/scenario-source.ts';
import type { Job } from '../check/seeds.ts';
import type { DigestRequest, JobResult } from '../check/types.ts';
import { ReportAggregator } from './aggregate.ts';
import type { ScenarioReport } from './document.ts';
import { renderHtml, renderMarkdown } from './render.ts';
import { timelineSvg } from './svg.ts';

/** The seed indexes whose timeline a report may draw: the first (failing seeds always get one). */
export const TIMELINE_INDEXES: readonly number[] = [0];

export function digestRequest(firstIndexes: readonly number[] = TIMELINE_INDEXES): DigestRequest {
  return { timelineIndexes: [...firstIndexes] };
}

/** Folds one result into an aggregator; the digest is dropped from the result once folded. */
export function foldResult(aggregator: ReportAggregator, result: JobResult): void {
  if (result.job.repeat) return;
  if (result.digest !== undefined) aggregator.add(result.digest);
  else aggregator.addCrash(result.job.index, result.job.seed, result.crash ?? `no digest for ${result.job.scenario} seed ${result.job.seed}`);
  delete result.digest;
}

export interface CollectOptions {
  source: ScenarioSource;
  jobs: readonly Job[];
  /** 1 runs in this process (no thread start-up: best for a few seeds); more use check's worker threads. */
  threads: number;
  progress: ProgressSink;
}

/**
 * Runs the seeds of one scenario and folds each into the aggregate as it arrives, so a report over
 * hundreds of seeds never holds more than one world per thread.
 */
export async function collectScenario(options: CollectOptions): Promise<{ aggregator: ReportAggregator; death?: ThreadDeath }> {
  const aggregator = new ReportAggregator();
  const progress = new Progress(options.jobs.length, renamed(options.progress));
  const request = digestRequest([Math.min(...options.jobs.map((job) => job.index))]);
  const onResult = (result: JobResult) => {
    foldResult(aggregator, result);
    progress.advance(result.verdict !== 'pass');
  };
  if (options.threads <= 1) {
    for (const job of options.jobs) onResult(await runJob(job, options.source.spec, request));
    progress.finish();
    return { aggregator };
  }
  const pooled = await runPool(options.jobs, { threads: options.threads, scenarios: { [options.source.name]: options.source.spec }, digest: request, onResult });
  progress.finish();
  return pooled.death === undefined ? { aggregator } : { aggregator, death: pooled.death };
}

/** Progress lines of a report say `report:`, not `check:`. */
function renamed(sink: ProgressSink): ProgressSink {
  if (sink.tty) return sink;
  return { tty: false, line: (text) => sink.line(text.replace(/^check: /, 'report: ')) };
}

/** A scenario name as one safe directory name (a file's `name` field could hold a slash or dots). */
export function reportDirName(scenario: string): string {
  const safe = scenario.replace(/[^\w.-]+/g, '_').replace(/^\.+/, '_');
  return safe === '' ? '_' : safe;
}

export interface WrittenReport {
  dir: string;
  html: string;
  markdown: string;
  json: string;
  /** The timeline on its own (for a README or a ticket); absent when no seed produced a world. */
  svg?: string;
}

/** Writes report.json, report.md, index.html and timeline.svg of one scenario into `dir`. */
export function writeScenarioReport(dir: string, report: ScenarioReport, links: { catalogue?: string } = {}): WrittenReport {
  mkdirSync(dir, { recursive: true });
  const written = { dir, html: join(dir, 'index.html'), markdown: join(dir, 'report.md'), json: join(dir, 'report.json') };
  writeFileSync(written.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(written.markdown, renderMarkdown(report));
  writeFileSync(written.html, renderHtml(report, links));
  const timeline = report.figures.timeline;
  if (timeline === null) return written;
  const svg = join(dir, 'timeline.svg');
  writeFileSync(svg, `<?xml version="1.0" encoding="UTF-8"?>\n${timelineSvg(timeline, `Timeline of ${report.scenario.name} seed ${timeline.seed}`)}\n`);
  return { ...written, svg };
}
