import type { z } from 'zod';
import type { EnqueueRequest } from '../../src/queue/types.ts';
import type { SeededRandom } from '../random.ts';
import { nonNegative, part, positive, probability, range, strict, withDefaults } from '../schema-kit.ts';
import { drawRequest, type Arrival, type RequestDrawing } from './draw.ts';

/**
 * The client swarm: a misbehaving client over the tasks the other parts produce, drawn per seed from
 * its own stream (`client-swarm`), so adding it leaves every other draw of a seed as it was.
 *
 * - exact resends (Q1) of a task at drawn moments of its life: soon after it arrives (usually before
 *   its first claim), a little later (usually while it runs), or long after (usually once it ended);
 * - conflicting resends: the same (tenant, topic, version) with another input, which the queue must
 *   refuse idempotency_conflict (Q1, I9);
 * - cancels (Q13) at drawn moments of a task's life: ready, running, uncertain, or already ended;
 * - versions out of order (Q2): a newer version that arrives before the topic's first version (which
 *   then arrives late and must be stored superseded), and two newer versions, the newest first;
 * - bursts: many arrivals at one instant, resends of tasks and new topics mixed;
 * - an operator who looks at the queue every operatorEveryMs and, with operatorCancelProbability,
 *   cancels one of the tasks it finds uncertain (Q13: the cancel is persisted, and confirmStopped ends
 *   the task cancelled); sim/world.ts runs it, from the stream `client-swarm/operator`.
 *
 * Which state a resend or cancel really met is not known when drawing; the coverage marks read it
 * from the run (checkers/marks.ts).
 */
export interface ClientSwarmSpec {
  /** Per task: probability that the client resends it; how many resends then. */
  resendProbability: number;
  resends: [number, number];
  /** Per task: probability of one conflicting resend. */
  conflictProbability: number;
  /** Per task: probability that the client cancels it. */
  cancelProbability: number;
  /** Per topic: probability of a newer version that arrives before the topic's first. */
  earlyVersionProbability: number;
  /** Per topic: probability of two newer versions after its last, the newest first. */
  lateVersionProbability: number;
  /** Bursts per run, and arrivals per burst. */
  bursts: [number, number];
  burstSize: [number, number];
  /** Resends and cancels come up to this long after the task's arrival. */
  maxDelayMs: number;
  /** The operator looks every operatorEveryMs (0: never) until operatorUntilMs, and cancels an uncertain task with this probability. */
  operatorEveryMs: number;
  operatorUntilMs: number;
  operatorCancelProbability: number;
}

export const CLIENT_SWARM_DEFAULTS: ClientSwarmSpec = {
  resendProbability: 0.4,
  resends: [1, 3],
  conflictProbability: 0.15,
  cancelProbability: 0.2,
  earlyVersionProbability: 0.1,
  lateVersionProbability: 0.1,
  bursts: [1, 2],
  burstSize: [4, 10],
  maxDelayMs: 120_000,
  operatorEveryMs: 5_000,
  operatorUntilMs: 150_000,
  operatorCancelProbability: 0.3,
};

const fields = {
  resendProbability: probability().meta({ description: 'Per task: probability that the client resends the exact same request; default 0.4.' }),
  resends: range(1).meta({ description: 'How many resends a resent task gets, [min, max]; default [1, 3].' }),
  conflictProbability: probability().meta({ description: 'Per task: probability of one resend with another input (refused idempotency_conflict, Q1); default 0.15.' }),
  cancelProbability: probability().meta({ description: 'Per task: probability that the client cancels it at a drawn moment (Q13); default 0.2.' }),
  earlyVersionProbability: probability().meta({ description: "Per topic: probability of a newer version arriving before the topic's first version (Q2); default 0.1." }),
  lateVersionProbability: probability().meta({ description: 'Per topic: probability of two newer versions after its last, the newest first (Q2); default 0.1.' }),
  bursts: range(0).meta({ description: 'Bursts per run, [min, max]: many arrivals at one instant; default [1, 2].' }),
  burstSize: range(1).meta({ description: 'Arrivals per burst, [min, max]: resends and new topics; default [4, 10].' }),
  maxDelayMs: positive().meta({ description: "Resends and cancels come up to this many ms after the task's arrival; default 120000." }),
  operatorEveryMs: nonNegative().meta({ description: 'The operator looks at the uncertain tasks every this many ms (0: no operator); default 5000.' }),
  operatorUntilMs: nonNegative().meta({ description: 'The operator stops looking after this many ms from the start; default 150000.' }),
  operatorCancelProbability: probability().meta({ description: 'Each time the operator finds uncertain tasks, it cancels one of them with this probability (Q13); default 0.3.' }),
};

/** The explicit form's `workload.clientSwarm`, before parts (workloads/legacy.ts). */
export const clientSwarmSchema = strict(fields, 'A misbehaving client over the other parts\' tasks: resends, conflicting resends, cancels, out-of-order versions, bursts.');

export const clientSwarmPart = part(
  'client-swarm',
  withDefaults(fields, CLIENT_SWARM_DEFAULTS),
  "A misbehaving client over the other parts' tasks, drawn per seed: resends at any moment of a task's life, conflicting resends, cancels, versions out of order, bursts.",
);
export type ClientSwarmPart = z.output<typeof clientSwarmPart>;

/** The swarm a client-swarm part describes. */
export function swarmOf(value: ClientSwarmPart): ClientSwarmSpec {
  const { kind: _kind, ...spec } = value;
  return spec;
}

/**
 * What the swarm's new requests are drawn with (a newer version of a topic, a burst's new topic): the
 * tenants, priorities and tiers of the part that draws the workload's arrivals, or, without one, the
 * tenants of the other parts' tasks, priorities 0 to 30 and the standard tier (workloads/index.ts).
 */
export interface SwarmDrawing extends RequestDrawing {
  tenants: readonly string[];
}

/** A moment of a task's life, as an offset from its arrival: soon, a little later, or long after. */
function moment(random: SeededRandom, swarm: ClientSwarmSpec): number {
  const late = Math.min(20_000, swarm.maxDelayMs);
  switch (random.int(0, 2)) {
    case 0:
      return random.int(0, Math.min(1_500, swarm.maxDelayMs));
    case 1:
      return random.int(Math.min(1_500, swarm.maxDelayMs), late);
    default:
      return random.int(late, swarm.maxDelayMs);
  }
}

/** The times the operator looks at the queue, in ms from the start. */
export function operatorTimes(swarm: ClientSwarmSpec): number[] {
  const times: number[] = [];
  if (swarm.operatorEveryMs > 0) for (let atMs = swarm.operatorEveryMs; atMs <= swarm.operatorUntilMs; atMs += swarm.operatorEveryMs) times.push(atMs);
  return times;
}

const keyOf = (request: EnqueueRequest) => JSON.stringify([request.tenant, request.topic, request.version]);

/**
 * The other parts' arrivals with the swarm's added (and cancels attached to first arrivals), sorted by
 * time; at equal times the other parts' arrivals come first, then the swarm's in the order drawn.
 */
export function clientSwarmArrivals(random: SeededRandom, spec: SwarmDrawing, swarm: ClientSwarmSpec, base: readonly Arrival[]): Arrival[] {
  const list = base.map((arrival) => ({ ...arrival }));
  const firsts = new Map<string, Arrival>();
  for (const arrival of list) if (!firsts.has(keyOf(arrival.request))) firsts.set(keyOf(arrival.request), arrival);
  const added: Arrival[] = [];
  const resend = (arrival: Arrival, atMs: number): Arrival => {
    const { cancelAtMs: _cancel, ...rest } = arrival;
    return { ...rest, atMs };
  };
  for (const first of firsts.values()) {
    if (random.chance(swarm.resendProbability)) {
      for (let n = random.int(swarm.resends[0], swarm.resends[1]); n > 0; n--) added.push(resend(first, first.atMs + moment(random, swarm)));
    }
    if (random.chance(swarm.conflictProbability)) {
      const changed = resend(first, first.atMs + moment(random, swarm));
      changed.request = { ...first.request, input: { ...(first.request.input as object), revision: 'client-swarm' } };
      added.push(changed);
    }
    if (random.chance(swarm.cancelProbability)) {
      const atMs = first.atMs + moment(random, swarm);
      if (first.cancelAtMs === undefined) first.cancelAtMs = atMs;
    }
  }
  // Versions per (tenant, topic): the first arrival time, the last, and the highest version.
  const topics = new Map<string, { tenant: string; topic: string; firstMs: number; lastMs: number; version: number; label?: string }>();
  for (const arrival of list) {
    const { tenant, topic, version } = arrival.request;
    const key = JSON.stringify([tenant, topic]);
    const seen = topics.get(key);
    if (seen === undefined) topics.set(key, { tenant, topic, firstMs: arrival.atMs, lastMs: arrival.atMs, version, ...(arrival.label === undefined ? {} : { label: arrival.label }) });
    else Object.assign(seen, { firstMs: Math.min(seen.firstMs, arrival.atMs), lastMs: Math.max(seen.lastMs, arrival.atMs), version: Math.max(seen.version, version) });
  }
  const labelled = (arrival: Arrival, label: string | undefined): Arrival => (label === undefined ? arrival : { ...arrival, label });
  for (const topic of topics.values()) {
    if (random.chance(swarm.earlyVersionProbability) && topic.firstMs > 0) {
      const atMs = topic.firstMs - random.int(1, Math.min(20_000, topic.firstMs));
      added.push(labelled({ atMs, request: drawRequest(random, spec, topic.tenant, topic.topic, ++topic.version) }, topic.label));
    }
    if (random.chance(swarm.lateVersionProbability)) {
      const older = ++topic.version;
      const newer = ++topic.version;
      const atMs = topic.lastMs + random.int(1_000, 30_000);
      added.push(labelled({ atMs, request: drawRequest(random, spec, topic.tenant, topic.topic, newer) }, topic.label));
      added.push(labelled({ atMs: atMs + random.int(0, 5_000), request: drawRequest(random, spec, topic.tenant, topic.topic, older) }, topic.label));
    }
  }
  const candidates = [...firsts.values()];
  const endMs = Math.max(0, ...list.map((arrival) => arrival.atMs));
  let burstTopic = 0;
  for (let burst = random.int(swarm.bursts[0], swarm.bursts[1]); burst > 0; burst--) {
    const atMs = random.int(0, endMs);
    for (let n = random.int(swarm.burstSize[0], swarm.burstSize[1]); n > 0; n--) {
      if (candidates.length > 0 && random.chance(0.5)) added.push(resend(random.pick(candidates), atMs));
      else if (spec.tenants.length > 0) {
        burstTopic++;
        added.push({ atMs, request: drawRequest(random, spec, random.pick(spec.tenants), `burst-${burstTopic}`, 1) });
      }
    }
  }
  return [...list, ...added].sort((a, b) => a.atMs - b.atMs);
}
