import type { EnqueueRequest } from '../src/queue/types.ts';
import { READ_ONLY_TOOLS, WRITE_TOOLS } from './actors/tools.ts';
import type { TaskScript } from './actors/scripted-model.ts';
import type { SeededRandom } from './random.ts';
import type { ExplicitTask, FloodSpec, RoundsSpec, WorkloadSpec } from './scenario.ts';

export interface Arrival {
  atMs: number;
  request: EnqueueRequest;
  /** The name expectations and reports use for the task: an explicit task's label, or its topic. */
  label?: string;
  /** Q14: the deadline, in ms from the start of the run; the world adds its start time. */
  deadlineMs?: number;
  /** Q13: once accepted, the client cancels the task at this time (ms from the start of the run). */
  cancelAtMs?: number;
}

/**
 * Draws the arrivals of a workload from the workload stream: topics spread over tenants, versions that
 * supersede, priorities, and a script per task that says what its model will decide.
 */
export function drawArrivals(random: SeededRandom, spec: WorkloadSpec): Arrival[] {
  const drawn = spec.rounds !== undefined ? drawRounds(random, spec, spec.rounds) : drawTopics(random, spec);
  if (spec.tasks === undefined && spec.floods === undefined) return drawn;
  // Explicit tasks and floods draw from their own streams, so adding one leaves the rest of a seed as it was.
  const extra = [...explicitArrivals(random.fork('tasks'), spec, spec.tasks ?? []), ...floodArrivals(random.fork('floods'), spec, spec.floods ?? [])];
  // A stable sort: at equal times, drawn arrivals first, then explicit tasks in file order, then floods.
  return [...drawn, ...extra].sort((a, b) => a.atMs - b.atMs);
}

function drawTopics(random: SeededRandom, spec: WorkloadSpec): Arrival[] {
  const arrivals: Arrival[] = [];
  for (let topic = 1; topic <= spec.topics; topic++) {
    const tenant = spec.tenants[(topic - 1) % spec.tenants.length]!;
    const versions = random.chance(spec.newVersionProbability) ? 2 : 1;
    let atMs = random.int(0, spec.arrivalWindowMs);
    for (let version = 1; version <= versions; version++) {
      arrivals.push({ atMs, request: drawRequest(random, spec, tenant, `topic-${topic}`, version) });
      atMs += random.int(1_000, Math.max(1_000, Math.floor(spec.arrivalWindowMs / 2)));
    }
  }
  return arrivals.sort((a, b) => a.atMs - b.atMs);
}

function drawRequest(random: SeededRandom, spec: WorkloadSpec, tenant: string, topic: string, version: number): EnqueueRequest {
  return {
    tenant,
    topic,
    version,
    priority: random.int(spec.priorities[0], spec.priorities[1]),
    tier: random.pick(spec.tiers),
    input: { script: spec.script === undefined ? drawScript(random, spec, `${tenant}/${topic}/v${version}`) : structuredClone(spec.script) },
  };
}

/**
 * Seed 002's load: rounds of tasks submitted together, each task on its own topic, tenants in turn.
 * The poison tasks, if any, are chosen from the whole run before anything else is drawn.
 */
function drawRounds(random: SeededRandom, spec: WorkloadSpec, rounds: RoundsSpec): Arrival[] {
  const total = rounds.count * rounds.tasksPerRound;
  const poisonCount = spec.poisonTasks ?? 0;
  if (poisonCount > total) throw new RangeError(`poisonTasks ${poisonCount} exceeds the ${total} tasks of the rounds`);
  const poison = new Set(random.shuffle([...Array(total).keys()]).slice(0, poisonCount));
  const arrivals: Arrival[] = [];
  for (let round = 0; round < rounds.count; round++) {
    for (let index = 0; index < rounds.tasksPerRound; index++) {
      const number = round * rounds.tasksPerRound + index;
      const tenant = spec.tenants[number % spec.tenants.length]!;
      const request = drawRequest(random, spec, tenant, `round-${round + 1}-task-${index + 1}`, 1);
      if (poison.has(number)) (request.input as { script: TaskScript }).script.poison = true;
      arrivals.push({ atMs: round * rounds.everyMs, request });
    }
  }
  return arrivals;
}

function explicitArrivals(random: SeededRandom, spec: WorkloadSpec, tasks: readonly ExplicitTask[]): Arrival[] {
  const arrivals: Arrival[] = [];
  for (const task of tasks) {
    const version = task.version ?? 1;
    const label = task.label ?? task.topic;
    const script = task.script !== undefined ? structuredClone(task.script) : spec.script !== undefined ? structuredClone(spec.script) : drawScript(random, spec, `${task.tenant}/${task.topic}/v${version}`);
    if (task.poison === true) script.poison = true;
    const request: EnqueueRequest = { tenant: task.tenant, topic: task.topic, version, priority: task.priority, tier: task.tier ?? spec.tiers[0], input: { script } };
    if (task.context !== undefined) request.context = { ...task.context };
    const deadlineMs = task.deadlineAfterMs === undefined ? undefined : task.atMs + task.deadlineAfterMs;
    const arrival = (atMs: number): Arrival => (deadlineMs === undefined ? { atMs, request, label } : { atMs, request, label, deadlineMs });
    arrivals.push(task.cancelAtMs === undefined ? arrival(task.atMs) : { ...arrival(task.atMs), cancelAtMs: task.cancelAtMs });
    for (const atMs of task.resendAtMs ?? []) arrivals.push(arrival(atMs));
    for (const [n, atMs] of (task.conflictAtMs ?? []).entries()) {
      const changed: EnqueueRequest = { ...request, input: { script, revision: n + 1 } };
      arrivals.push(deadlineMs === undefined ? { atMs, request: changed, label } : { atMs, request: changed, label, deadlineMs });
    }
  }
  return arrivals;
}

function floodArrivals(random: SeededRandom, spec: WorkloadSpec, floods: readonly FloodSpec[]): Arrival[] {
  const arrivals: Arrival[] = [];
  for (const flood of floods) {
    let n = 0;
    for (let atMs = flood.fromMs; atMs < flood.untilMs; atMs += flood.everyMs) {
      for (let k = 0; k < (flood.count ?? 1); k++) {
        n++;
        const topic = `${flood.topicPrefix}-${n}`;
        const request = drawRequest(random, { ...spec, priorities: flood.priority }, flood.tenant, topic, 1);
        arrivals.push({ atMs, request, label: topic });
      }
    }
  }
  return arrivals;
}

export function drawScript(random: SeededRandom, spec: WorkloadSpec, label: string): TaskScript {
  const stepCount = random.int(spec.steps[0], spec.steps[1]);
  const writeStep = random.chance(spec.writeProbability) ? random.int(0, stepCount - 1) : -1;
  const tokens = () => random.int(spec.tokensPerCall[0], spec.tokensPerCall[1]);
  const steps: TaskScript['steps'] = [];
  for (let step = 0; step < stepCount; step++) {
    const calls: TaskScript['steps'][number]['calls'] = [];
    for (let n = random.int(spec.callsPerStep[0], spec.callsPerStep[1]); n > 0; n--) {
      calls.push({ tool: random.pick(READ_ONLY_TOOLS), args: { ref: `${label}/s${step}`, n } });
    }
    if (step === writeStep) {
      const items = [{ id: 'item-b', qty: random.int(1, 3) }, { id: 'item-a', qty: 1 }];
      calls.push({ tool: random.pick(WRITE_TOOLS), args: { order: label, items } });
    }
    steps.push({ calls, inputTokens: tokens(), outputTokens: Math.ceil(tokens() / 4) });
  }
  const script: TaskScript = {
    steps,
    answer: { status: 'needs_human', summary: `investigated ${label}` },
    finalTokens: { inputTokens: tokens(), outputTokens: Math.ceil(tokens() / 4) },
  };
  if (spec.poisonProbability !== undefined && random.chance(spec.poisonProbability)) script.poison = true;
  return script;
}
