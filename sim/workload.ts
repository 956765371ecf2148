import type { SeededRandom } from './random.ts';
import type { WorkloadSpec } from './scenario.ts';
import { clientSwarmArrivals } from './workloads/client-swarm.ts';
import type { Arrival } from './workloads/draw.ts';
import { floodArrivals } from './workloads/flood.ts';
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
function withAdmission(random: SeededRandom, spec: WorkloadSpec, drawn: Arrival[]): Arrival[] {
  if (spec.needs === undefined && spec.criticalProbability === undefined) return drawn;
  const critical = spec.criticalProbability === undefined ? undefined : random.fork('critical');
  for (const arrival of drawn) admitted(arrival.request, spec.needs, critical?.chance(spec.criticalProbability!));
  return drawn;
}

/**
 * Draws the arrivals of a workload from the workload stream: the drawn part (topics or rounds), then
 * the explicit tasks and the floods, each part by its own file in sim/workloads/; then the client
 * swarm over all of them, from its own stream too.
 */
export function drawArrivals(random: SeededRandom, spec: WorkloadSpec): Arrival[] {
  const arrivals = partArrivals(random, spec);
  return spec.clientSwarm === undefined ? arrivals : clientSwarmArrivals(random.fork('client-swarm'), spec, spec.clientSwarm, arrivals);
}

function partArrivals(random: SeededRandom, spec: WorkloadSpec): Arrival[] {
  const drawn = withAdmission(random, spec, spec.rounds !== undefined ? drawRounds(random, spec, spec.rounds) : drawTopics(random, spec));
  if (spec.tasks === undefined && spec.floods === undefined) return drawn;
  // Explicit tasks and floods draw from their own streams, so adding one leaves the rest of a seed as it was.
  const extra = [...explicitArrivals(random.fork('tasks'), spec, spec.tasks ?? []), ...floodArrivals(random.fork('floods'), spec, spec.floods ?? [])];
  // A stable sort: at equal times, drawn arrivals first, then explicit tasks in file order, then floods.
  return [...drawn, ...extra].sort((a, b) => a.atMs - b.atMs);
}
