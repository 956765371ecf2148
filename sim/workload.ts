import type { SeededRandom } from './random.ts';
import type { WorkloadSpec } from './scenario.ts';
import { clientSwarmArrivals } from './workloads/client-swarm.ts';
import type { Arrival } from './workloads/draw.ts';
import { floodArrivals } from './workloads/flood.ts';
import { clientSwarmOf, drawnPartOf, explicitTasksOf, floodsOf, swarmDrawing, type RoundsPart, type TopicsPart } from './workloads/index.ts';
import { drawRounds } from './workloads/rounds.ts';
import { explicitArrivals } from './workloads/tasks.ts';
import { drawTopics } from './workloads/topics.ts';
import { admitted } from './workloads/admission.ts';

export type { Arrival } from './workloads/draw.ts';
export { drawScript } from './workloads/draw.ts';

/**
 * A1, A2: the drawn tasks' needs, and which of them are critical, from a stream of its own (`critical`),
 * so a workload without them draws exactly what it drew before.
 */
function withAdmission(random: SeededRandom, part: TopicsPart | RoundsPart, drawn: Arrival[]): Arrival[] {
  const needs = part.needs !== undefined && Object.keys(part.needs).length > 0 ? part.needs : undefined;
  if (needs === undefined && part.criticalProbability === undefined) return drawn;
  const critical = part.criticalProbability === undefined ? undefined : random.fork('critical');
  for (const arrival of drawn) admitted(arrival.request, needs, critical?.chance(part.criticalProbability!));
  return drawn;
}

/**
 * Draws the arrivals of a workload from the workload stream: the drawn part (topics or rounds), then
 * the explicit tasks and the floods, each part by its own file in sim/workloads/; then the client
 * swarm over all of them, from its own stream too.
 */
export function drawArrivals(random: SeededRandom, workload: WorkloadSpec): Arrival[] {
  const arrivals = partArrivals(random, workload);
  const swarm = clientSwarmOf(workload);
  return swarm === undefined ? arrivals : clientSwarmArrivals(random.fork('client-swarm'), swarmDrawing(workload), swarm, arrivals);
}

function partArrivals(random: SeededRandom, workload: WorkloadSpec): Arrival[] {
  const part = drawnPartOf(workload);
  const { scripts } = workload;
  const drawn = part === undefined ? [] : withAdmission(random, part, part.kind === 'rounds' ? drawRounds(random, part, scripts) : drawTopics(random, part, scripts));
  const tasks = explicitTasksOf(workload);
  const floods = floodsOf(workload);
  if (tasks.length === 0 && floods.length === 0) return drawn;
  // Explicit tasks and floods draw from their own streams, so adding one leaves the rest of a seed as it was.
  const extra = [...explicitArrivals(random.fork('tasks'), scripts, tasks), ...floodArrivals(random.fork('floods'), scripts, floods)];
  // A stable sort: at equal times, drawn arrivals first, then explicit tasks in file order, then floods.
  return [...drawn, ...extra].sort((a, b) => a.atMs - b.atMs);
}
