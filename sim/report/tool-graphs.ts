import { graphRuns, graphSteps, type GraphStepSpec } from '../checkers/i21-tool-graph.ts';
import type { WorldResult } from '../world.ts';
import { esc } from './svg.ts';
import { formatMs } from './stats.ts';

/**
 * A7 in a report: each run of a step whose tool calls form a graph (seed 003's T1..T4), as the calls of
 * one (task, generation, step) laid out by topological layer, each with when it ran on the simulator's
 * timeline and how it ended. Plain data, computed where the seed ran, so it travels with the timeline
 * (timeline-model.ts) into report.json; rendered as a table in report.md and a small chart per run in
 * index.html. The graph (dependencies, lanes) and the calls each generation made are I21's reading of
 * the script and of the history's `tool` operations (checkers/i21-tool-graph.ts); this file adds the
 * layers and the times.
 */

export interface GraphCallView {
  /** The call's name in its step (T1, g3, ...). */
  name: string;
  tool: string;
  /** A write's lane: its resource, or `tool:<name>` when it names none; absent for a read. */
  lane?: string;
  /** 0 for a call with no dependency, else one more than its deepest dependency (0 for every call of a refused plan). */
  layer: number;
  dependsOn: string[];
  /** When the tool was called and answered, in ms from the step's first call; absent if it did not run, or never answered. */
  fromMs?: number;
  toMs?: number;
  /** ok, a failure's error class, `open` (called, never answered), `ledger` (answered from the effect ledger), `skipped`, or `not run`. */
  outcome: string;
}

export interface GraphRunView {
  /** The task's label (G1, X1, ...) or its topic. */
  label: string;
  taskId: number;
  generation: number;
  step: number;
  /** When the step's first call started, in ms from the start of the run. */
  atMs: number;
  /** Why the plan was refused (a cycle ...); then no call ran. */
  refused?: string;
  calls: GraphCallView[];
}

/** At most this many graph runs are kept per seed. */
export const MAX_GRAPH_RUNS = 12;

/** Each call's topological layer: 0 with no dependency, else one more than its deepest dependency (all 0 for a refused plan). */
function layersOf(step: GraphStepSpec): Map<string, number> {
  const layers = new Map<string, number>();
  if (step.refused !== undefined) return new Map(step.calls.map((call) => [call.callId, 0]));
  const layerOf = (callId: string): number => {
    const known = layers.get(callId);
    if (known !== undefined) return known;
    const layer = Math.max(-1, ...(step.byId.get(callId)?.dependsOn ?? []).map(layerOf)) + 1;
    layers.set(callId, layer);
    return layer;
  };
  for (const call of step.calls) layerOf(call.callId);
  return layers;
}

/** The graph runs of one seed, first by task then by generation, at most MAX_GRAPH_RUNS. */
export function toolGraphRuns(world: WorldResult): GraphRunView[] {
  // The graph of each step is the judge's reading of the script (checkers/i21-tool-graph.ts), and so are
  // the calls each generation made: this view only lays them out.
  const steps = graphSteps(world);
  const calledRuns = graphRuns(world);
  const entries = world.history.entries();
  const labels = new Map<number, string>();
  for (const { arrival, result } of world.enqueued) if (result.ok && !labels.has(result.taskId)) labels.set(result.taskId, arrival.label ?? arrival.request.topic);
  const generations = new Map<number, number[]>();
  const ledgered = new Set<string>();
  for (const event of world.events) {
    if (event.type === 'claimed') {
      const generation = event.generation ?? Number(event.data.generation ?? 0);
      const list = generations.get(event.taskId) ?? [];
      if (!list.includes(generation)) list.push(generation);
      generations.set(event.taskId, list);
    } else if (event.type === 'tool_result' && typeof event.data.toolCallId === 'string') ledgered.add(`${event.taskId}/${event.generation ?? ''}/${event.data.toolCallId}`);
  }
  const runs: GraphRunView[] = [];
  for (const taskId of [...steps.keys()].sort((a, b) => a - b)) {
    const lastStatuses = checkpointStatuses(world.checkpoints.get(taskId)?.state);
    const taskGenerations = generations.get(taskId) ?? [];
    for (const planned of steps.get(taskId)!) {
      const layers = layersOf(planned);
      for (const generation of taskGenerations) {
        const called = new Map((calledRuns.get(`${taskId}/${generation}`)?.calls ?? []).filter((call) => call.step === planned.step).map((call) => [call.callId, call]));
        const last = generation === taskGenerations.at(-1);
        if ((called.size === 0 && !(planned.refused !== undefined && last)) || runs.length >= MAX_GRAPH_RUNS) continue;
        const atMs = called.size > 0 ? Math.min(...[...called.values()].map((call) => entries[call.invokeIndex]!.timeMs)) : world.startMs;
        const calls = planned.calls.map((call): GraphCallView => {
          const view: GraphCallView = { name: call.name, tool: call.tool, layer: layers.get(call.callId)!, dependsOn: call.dependsOn.map((id) => planned.byId.get(id)?.name ?? id), outcome: 'not run' };
          if (call.lane !== undefined) view.lane = call.lane;
          const made = called.get(call.callId);
          if (made !== undefined) {
            view.fromMs = entries[made.invokeIndex]!.timeMs - atMs;
            if (made.endIndex !== undefined) view.toMs = entries[made.endIndex]!.timeMs - atMs;
            view.outcome = made.outcome === 'failed' ? (made.reason ?? 'failed') : made.outcome;
          } else if (!call.readOnly && ledgered.has(`${taskId}/${generation}/${call.callId}`)) view.outcome = 'ledger';
          else if (last && lastStatuses.get(call.callId) === 'skipped') view.outcome = 'skipped';
          return view;
        });
        const run: GraphRunView = { label: labels.get(taskId) ?? String(taskId), taskId, generation, step: planned.step, atMs: Math.max(0, atMs - world.startMs), calls };
        if (planned.refused !== undefined) run.refused = planned.refused;
        runs.push(run);
      }
    }
  }
  return runs;
}

/** The status each call of a finished step has in a checkpoint's state (A7 records each call's outcome). */
function checkpointStatuses(state: unknown): Map<string, string> {
  const statuses = new Map<string, string>();
  const messages = (state as { messages?: { role?: string; results?: { toolCallId?: string; status?: string }[] }[] } | undefined)?.messages ?? [];
  for (const message of messages) {
    if (message.role !== 'tool') continue;
    for (const result of message.results ?? []) if (typeof result.toolCallId === 'string' && typeof result.status === 'string') statuses.set(result.toolCallId, result.status);
  }
  return statuses;
}

function title(run: GraphRunView): string {
  return `${run.label} (task ${run.taskId}), generation ${run.generation}, step ${run.step}${run.refused === undefined ? `, from ${formatMs(run.atMs)}` : ''}`;
}

function byLayer(run: GraphRunView): GraphCallView[] {
  return [...run.calls].sort((a, b) => a.layer - b.layer);
}

/** report.md: one table per graph run, its calls by layer. */
export function toolGraphMarkdown(runs: readonly GraphRunView[]): string {
  if (runs.length === 0) return '';
  const out: string[] = [
    'Each step whose tool calls form a graph (A7), per generation that ran it: the calls by topological layer (a layer starts once the layers it depends on succeeded), each with when the tool was called and answered, in ms from the step\'s first call, and how it ended (`ledger`: a write answered from the effect ledger on a takeover; `skipped`: a dependency failed; `open`: never answered).',
    '',
  ];
  for (const run of runs) {
    out.push(`**${title(run)}**${run.refused === undefined ? '' : `: plan refused (${run.refused}), no call ran`}`, '');
    out.push('| layer | call | tool | lane | depends on | called | answered | outcome |', '|---|---|---|---|---|---|---|---|');
    for (const call of byLayer(run)) {
      const cells = [String(call.layer), call.name, call.tool, call.lane ?? '', call.dependsOn.join(', '), call.fromMs === undefined ? '' : `+${call.fromMs} ms`, call.toMs === undefined ? '' : `+${call.toMs} ms`, call.outcome];
      out.push(`| ${cells.join(' | ')} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

const OUTCOME_COLOURS: Record<string, string> = { ok: '#59a14f', open: '#bab0ac', ledger: '#76b7b2' };

/** index.html: one small chart per graph run, a row per call grouped by layer, a bar from call to answer. */
export function toolGraphSvg(run: GraphRunView): string {
  const calls = byLayer(run);
  const width = 720;
  const label = 210;
  const row = 18;
  const top = 20;
  const spanMs = Math.max(1, ...calls.map((call) => call.toMs ?? call.fromMs ?? 0));
  const x = (ms: number) => label + (ms / spanMs) * (width - label - 20);
  const parts: string[] = [`<text x="4" y="13" class="tl-lane">${esc(title(run))}</text>`];
  calls.forEach((call, index) => {
    const y = top + index * row;
    if (index > 0 && call.layer !== calls[index - 1]!.layer) parts.push(`<line x1="4" y1="${y - 2}" x2="${width - 4}" y2="${y - 2}" stroke="#ddd"/>`);
    parts.push(`<text x="4" y="${y + 12}" class="tl-axis">${esc(`L${call.layer} ${call.name} ${call.tool}${call.lane === undefined ? '' : ` [${call.lane}]`}`)}</text>`);
    const hover = `${call.name}: ${call.outcome}${call.fromMs === undefined ? '' : ` +${call.fromMs} ms`}${call.toMs === undefined ? '' : ` to +${call.toMs} ms`}${call.dependsOn.length > 0 ? `; after ${call.dependsOn.join(', ')}` : ''}`;
    if (call.fromMs === undefined) {
      parts.push(`<text x="${label}" y="${y + 12}" class="tl-note"><title>${esc(hover)}</title>${esc(call.outcome)}</text>`);
      return;
    }
    const from = x(call.fromMs);
    const to = x(call.toMs ?? spanMs);
    const colour = OUTCOME_COLOURS[call.outcome] ?? '#e15759';
    parts.push(`<rect x="${from.toFixed(1)}" y="${y + 2}" width="${Math.max(2, to - from).toFixed(1)}" height="${row - 6}" fill="${colour}"><title>${esc(hover)}</title></rect>`);
  });
  const height = top + calls.length * row + 6;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${esc(title(run))}">${parts.join('')}</svg>`;
}
