import type { AgentRun } from '../actors/agent-module.ts';
import type { Violation } from '../report-types.ts';
import type { WorldResult } from '../world.ts';

/**
 * T3: the agent module's own invariants (its named export `invariants`), judged beside I1..I22 on the
 * finished run. Each is a pure function of the run: every request its twins received with the tool
 * call that made it, the final tasks and the whole history. A violation is reported under the
 * invariant's own name, with its kind (safety by default), so the verdict, exit code, counterexample
 * and replay treat it as they treat the harness's own. An invariant that throws is reported as its own
 * violation, never as a pass.
 */
export function teamViolations(world: WorldResult): Violation[] {
  const agent = world.agent;
  if (agent === undefined || agent.module.invariants.length === 0) return [];
  // A task's input is the one its first accepted enqueue sent (a resend of the key is the same task).
  const inputs = new Map<number, unknown>();
  for (const { arrival, result } of world.enqueued) if (result.ok && !inputs.has(result.taskId)) inputs.set(result.taskId, arrival.request.input);
  const run: AgentRun = Object.freeze({
    executions: agent.twins.executions,
    tasks: world.final.tasks.map((task) => ({ id: task.id, tenant: task.tenant, topic: task.topic, version: task.version, state: task.state, input: inputs.get(task.id) ?? null, result: task.result ?? null })),
    history: world.history.entries(),
  });
  const violations: Violation[] = [];
  for (const invariant of agent.module.invariants) {
    const kind = invariant.kind ?? 'safety';
    let found: ReturnType<typeof invariant.check>;
    try {
      found = invariant.check(run);
    } catch (error) {
      violations.push({ invariant: invariant.name, kind, message: `the invariant threw: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}` });
      continue;
    }
    if (!Array.isArray(found)) {
      violations.push({ invariant: invariant.name, kind, message: `the invariant returned ${typeof found}, not an array of violations` });
      continue;
    }
    for (const violation of found) {
      if (typeof violation === 'string') violations.push({ invariant: invariant.name, kind, message: violation });
      else violations.push({ invariant: invariant.name, kind, message: String(violation.message), ...(violation.taskId === undefined ? {} : { taskId: violation.taskId }), ...(violation.at === undefined ? {} : { at: [...violation.at] }) });
    }
  }
  return violations;
}
