import type { TaskEvent } from '../../src/queue/types.ts';
import type { HistoryEntry } from '../history.ts';

/**
 * Takeover latency (seed 002: "from kill to the taker's task_resumed, about 31 to 44 s, mostly the
 * 30 s lease"): for every task a killed worker was running when it died, the time from the kill to
 * the moment another generation picked the run up again.
 *
 * Kill times come from the history's kill notes (the timeline); takeover times from the event log's
 * `at` (the clock the core reads). The two agree while the clock never jumped, which is the case in
 * the scenarios this is meant for (kill-takeover has no clock-jump faults).
 */
export interface TakeoverSample {
  taskId: number;
  /** The incarnation that died holding the task, its generation, and when it died. */
  killed: string;
  killedGeneration: number;
  killedAtMs: number;
  /** The first generation that claimed the task after the kill, and when. */
  generation: number;
  claimedAtMs: number;
  /** When that generation announced task_resumed; absent when there was no checkpoint and it started over. */
  resumedAtMs?: number;
  /** To task_resumed, or to the claim for a run that started over. */
  latencyMs: number;
}

export interface LatencyDistribution {
  count: number;
  minMs: number;
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
}

/** What the samples need of a finished run: its history and its event log. */
export interface TakeoverInput {
  history: { entries(): readonly HistoryEntry[] };
  events: readonly TaskEvent[];
}

/**
 * Every (kill, held task) pair of one run. A task counts as held by the killed incarnation when that
 * incarnation's claim is at or before the kill and no event moved the task out of running since
 * (a run that committed its terminal write just before the kill is not held). A held task that was
 * never claimed again has no sample; `unresolvedTakeovers` lists those.
 */
export function takeoverSamples(run: TakeoverInput): TakeoverSample[] {
  return heldAtKills(run).flatMap((held) => (held.takeover === undefined ? [] : [held.takeover]));
}

/** Held tasks of killed incarnations that no later generation claimed: a lost task if the run drained. */
export function unresolvedTakeovers(run: TakeoverInput): { taskId: number; killed: string; killedAtMs: number }[] {
  return heldAtKills(run)
    .filter((held) => held.takeover === undefined)
    .map(({ taskId, killed, killedAtMs }) => ({ taskId, killed, killedAtMs }));
}

/** Nearest-rank percentiles over the latencies (undefined for no samples). */
export function latencyDistribution(latenciesMs: readonly number[]): LatencyDistribution | undefined {
  if (latenciesMs.length === 0) return undefined;
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
  return { count: sorted.length, minMs: sorted[0]!, p50Ms: rank(0.5), p90Ms: rank(0.9), maxMs: sorted[sorted.length - 1]! };
}

/**
 * The distribution over many runs: `resumed` covers takeovers that announced task_resumed (seed 002's
 * measure), `all` adds the runs that had no checkpoint yet and started over (measured to the claim).
 */
export function takeoverLatency(runs: readonly TakeoverInput[]): {
  samples: TakeoverSample[];
  resumed: LatencyDistribution | undefined;
  all: LatencyDistribution | undefined;
} {
  const samples = runs.flatMap(takeoverSamples);
  return {
    samples,
    resumed: latencyDistribution(samples.filter((sample) => sample.resumedAtMs !== undefined).map((sample) => sample.latencyMs)),
    all: latencyDistribution(samples.map((sample) => sample.latencyMs)),
  };
}

/** One line for test output and reports, e.g. `n=412 min=21.0s p50=31.2s p90=36.9s max=43.0s`. */
export function formatDistribution(distribution: LatencyDistribution | undefined): string {
  if (distribution === undefined) return 'n=0';
  const s = (ms: number) => `${(ms / 1_000).toFixed(1)}s`;
  return `n=${distribution.count} min=${s(distribution.minMs)} p50=${s(distribution.p50Ms)} p90=${s(distribution.p90Ms)} max=${s(distribution.maxMs)}`;
}

interface Held {
  taskId: number;
  killed: string;
  killedAtMs: number;
  takeover?: TakeoverSample;
}

/**
 * The runs `workerId` had running at `atMs`: its claim is at or before then and no event moved the task
 * out of running since. Also used for paused workers (the zombie's runs).
 */
export function runsHeldAt(events: readonly TaskEvent[], workerId: string, atMs: number): { taskId: number; generation: number }[] {
  const held: { taskId: number; generation: number }[] = [];
  for (const [taskId, taskEvents] of groupByTask(events)) {
    const claim = runningClaimAt(taskEvents, workerId, atMs);
    if (claim !== undefined) held.push({ taskId, generation: claim.generation! });
  }
  return held;
}

function heldAtKills(run: TakeoverInput): Held[] {
  const byTask = groupByTask(run.events);
  const held: Held[] = [];
  for (const entry of run.history.entries()) {
    if (entry.type !== 'note' || entry.kind !== 'kill') continue;
    for (const [taskId, events] of byTask) {
      const claim = runningClaimAt(events, entry.actor, entry.timeMs);
      if (claim === undefined) continue;
      const generation = claim.generation!;
      const item: Held = { taskId, killed: entry.actor, killedAtMs: entry.timeMs };
      const next = events.find((event) => event.type === 'claimed' && (event.generation ?? 0) > generation && event.at >= entry.timeMs);
      if (next !== undefined) {
        const resumed = events.find((event) => event.type === 'task_resumed' && event.generation === next.generation);
        const sample: TakeoverSample = {
          taskId,
          killed: entry.actor,
          killedGeneration: generation,
          killedAtMs: entry.timeMs,
          generation: next.generation!,
          claimedAtMs: next.at,
          latencyMs: (resumed?.at ?? next.at) - entry.timeMs,
        };
        if (resumed !== undefined) sample.resumedAtMs = resumed.at;
        item.takeover = sample;
      }
      held.push(item);
    }
  }
  return held;
}

/** The claim by `workerId` whose run was still running at `atMs`, if any. */
function runningClaimAt(events: readonly TaskEvent[], workerId: string, atMs: number): TaskEvent | undefined {
  let claim: TaskEvent | undefined;
  for (const event of events) {
    if (event.at > atMs) break;
    if (event.type === 'claimed') claim = event.workerId === workerId ? event : undefined;
    else if (claim !== undefined && event.data.from === 'running') claim = undefined;
  }
  return claim;
}

function groupByTask(events: readonly TaskEvent[]): Map<number, TaskEvent[]> {
  const byTask = new Map<number, TaskEvent[]>();
  for (const event of events) {
    const list = byTask.get(event.taskId);
    if (list === undefined) byTask.set(event.taskId, [event]);
    else list.push(event);
  }
  for (const list of byTask.values()) list.sort((a, b) => a.seq - b.seq);
  return byTask;
}
