import { beforeAll, describe, expect, it } from 'vitest';
import type { TaskScript } from '../actors/scripted-model.ts';
import type { History, HistoryEntry } from '../history.ts';
import { simulate } from '../run-scenario.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { WorldResult } from '../world.ts';
import { expectClean, expectViolation } from './__test-helpers__/expect-checker.ts';
import { graphMarks, graphRuns, graphSteps, i21ToolGraph, planRefusal, type GraphCallSpec, type GraphRun } from './i21-tool-graph.ts';
import { coverageMarks } from './marks.ts';
import { loadSimAgent } from '../actors/agent-module.ts';

/**
 * I21 is judged on real runs of the `tool-graph` scenario (seed 003's T1..T4 graph in ten tasks, X1's
 * cycle, tool errors and kills between calls), and each rule is shown to fail on a copy of such a run
 * edited to break exactly it. The history is append-only, so an edited copy is a new list of entries
 * behind the one method the checkers read (`entries()`); each edit keeps every entry's index.
 */

const scenario = catalogueScenario('tool-graph');
const worlds = new Map<string, WorldResult>();

async function run(seed: string): Promise<WorldResult> {
  let world = worlds.get(seed);
  if (world === undefined) worlds.set(seed, (world = (await simulate({ scenario, seed })).world));
  return world;
}

/** A copy of the world whose history entries are `edit`ed (a new object, so no memoised analysis is reused). */
function withEntries(world: WorldResult, edit: (entries: HistoryEntry[]) => HistoryEntry[]): WorldResult {
  const list = edit(world.history.entries().map((entry) => ({ ...entry })));
  const history = { entries: () => list, get length() { return list.length; } } as unknown as History;
  return { ...world, history };
}

function withEvents(world: WorldResult, edit: (events: WorldResult['events']) => WorldResult['events']): WorldResult {
  return { ...world, events: edit(world.events.map((event) => ({ ...event, data: { ...event.data } }))) };
}

/** An entry turned into a note at the same index: the operation it completed stays open. */
function asNote(entry: HistoryEntry): HistoryEntry {
  return { type: 'note', index: entry.index, timeMs: entry.timeMs, actor: entry.actor, kind: 'edited-out' };
}

/** A run in which T1, T2 and T3 all answered ok (T3 a real tool call, not the ledger's answer). */
function fullRun(world: WorldResult): { run: GraphRun; call: (name: string) => GraphRun['calls'][number] } {
  for (const candidate of graphRuns(world).values()) {
    const byName = new Map(candidate.calls.filter((c) => c.step === 0).map((c) => [c.name, c]));
    if (['T1', 'T2', 'T3'].every((name) => byName.get(name)?.outcome === 'ok')) return { run: candidate, call: (name) => byName.get(name)! };
  }
  throw new Error('no run with T1..T3 ok');
}

function taskOfTopic(world: WorldResult, topic: string): number {
  return world.final.tasks.find((task) => task.topic === topic)!.id;
}

describe('I21 tool graph', () => {
  beforeAll(async () => {
    for (let seed = 1; seed <= 6; seed++) await run(String(seed));
  });

  it('passes the real runs of tool-graph seeds 1..6, which really ran graphs', async () => {
    for (let seed = 1; seed <= 6; seed++) {
      const world = await run(String(seed));
      expectClean(i21ToolGraph, world);
      const tools = world.history.entries().filter((entry) => entry.type === 'invoke' && entry.op === 'tool');
      expect(tools.length, `seed ${seed}`).toBeGreaterThan(20);
      expect(world.history.entries().some((entry) => entry.type === 'fail' && entry.op === 'tool')).toBe(true);
      const marks = coverageMarks(world);
      expect(marks.graph_concurrent).toBeGreaterThan(0);
      expect(marks.graph_cycle_refused).toBe(1);
    }
  });

  it('reads the graph from the script: ten T1..T4 graphs and X1 refused for its cycle', async () => {
    const world = await run('1');
    const steps = [...graphSteps(world).values()].flat();
    expect(steps.length).toBe(11);
    const refused = steps.filter((step) => step.refused !== undefined);
    expect(refused.map((step) => step.refused)).toEqual([expect.stringMatching(/^a cycle t\d+-s0-A -> t\d+-s0-B -> t\d+-s0-A$/)]);
    const t4 = steps.find((step) => step.refused === undefined)!.calls.find((call) => call.name === 'T4')!;
    expect(t4).toMatchObject({ readOnly: false, lane: 'mail', tool: 'issue_refund' });
    expect(graphMarks(world)).toMatchObject({ refused: 1 });
  });

  it('refuses a plan as the SPEC says: a repeated id, an unknown or self dependency, a cycle', () => {
    const call = (callId: string, dependsOn: string[] = []): GraphCallSpec => ({ callId, name: callId, tool: 'lookup_order', readOnly: true, dependsOn });
    expect(planRefusal([call('a'), call('b', ['a'])])).toBeUndefined();
    expect(planRefusal([call('a'), call('a')])).toMatch(/appears twice/);
    expect(planRefusal([call('a', ['z'])])).toMatch(/unknown call z/);
    expect(planRefusal([call('a', ['a'])])).toMatch(/depends on itself/);
    expect(planRefusal([call('a', ['c']), call('b', ['a']), call('c', ['b'])])).toMatch(/a cycle a -> c -> b -> a/);
  });

  it('early-start: fails when a call started although a dependency had not succeeded', async () => {
    const world = await run('1');
    const { run: graph, call } = fullRun(world);
    const t2 = call('T2');
    // T2's answer becomes a retryable failure: T3 then started before its dependency succeeded.
    const edited = withEntries(world, (entries) => {
      entries[t2.endIndex!] = { ...(entries[t2.endIndex!] as HistoryEntry & { invokeIndex: number }), type: 'fail', reason: 'transient_network' } as HistoryEntry;
      return entries;
    });
    expectViolation(i21ToolGraph, edited, new RegExp(`I21 early-start: task ${graph.taskId} g${graph.generation}: t${graph.taskId}-s0-T3 started \\(history ${call('T3').invokeIndex}\\) before its dependency t${graph.taskId}-s0-T2 succeeded`));
  });

  it('passes a re-run in which a read failed but the update the ledger recorded stands and the e-mail is sent (R2)', async () => {
    // Seed 14: task 6's generation 2 re-ran its graph from checkpoint A; T2 failed business_error this
    // time, T3 (recorded by generation 1) was answered by the ledger without a call, and T4 ran after it.
    // (Seed 4 was this run until the worker began claiming the moment a slot frees, issue 31 W1.)
    const world = await run('14');
    const rerun = graphRuns(world).get('6/2');
    const byName = new Map(rerun!.calls.map((c) => [c.name, c]));
    expect(byName.get('T2')).toMatchObject({ outcome: 'failed', reason: 'business_error' });
    expect(byName.has('T3')).toBe(false);
    expect(byName.get('T4')?.outcome).toBe('ok');
    expectClean(i21ToolGraph, world);
  });

  it('dependent-ran: fails when a dependent (direct or not) of a definite failure ran', async () => {
    const world = await run('1');
    const { run: graph, call } = fullRun(world);
    const t1 = call('T1');
    const edited = withEntries(world, (entries) => {
      entries[t1.endIndex!] = { ...(entries[t1.endIndex!] as HistoryEntry & { invokeIndex: number }), type: 'fail', reason: 'business_error' } as HistoryEntry;
      return entries;
    });
    const prefix = `I21 dependent-ran: task ${graph.taskId} g${graph.generation}: t${graph.taskId}-s0-`;
    expectViolation(i21ToolGraph, edited, new RegExp(`${prefix}T3 started \\(history ${call('T3').invokeIndex}\\) although t${graph.taskId}-s0-T1, which it depends on, failed business_error`));
    const messages = i21ToolGraph.check(edited).map((violation) => violation.message);
    // Reported as dependent-ran, not also as an early start.
    expect(messages.filter((message) => message.includes('early-start') && message.includes(`t${graph.taskId}-s0-T3 `))).toEqual([]);
    // T4 depends on T1 through T3, when it was called in that generation.
    if (graph.calls.some((c) => c.name === 'T4')) expect(messages.join('\n')).toMatch(new RegExp(`${prefix}T4 started .* although t${graph.taskId}-s0-T1`));
  });

  it('overlap: fails when two writes of one lane were in flight at once (an open call lasts to the end)', async () => {
    const world = await run('1');
    // Put T4 on T3's lane (the graph's truth is the script), then leave T3 unanswered: it is still in flight when T4 starts.
    const { run: graph, call } = (() => {
      for (const candidate of graphRuns(world).values()) {
        const t3 = candidate.calls.find((c) => c.name === 'T3' && c.outcome === 'ok');
        const t4 = candidate.calls.find((c) => c.name === 'T4');
        if (t3 !== undefined && t4 !== undefined && t3.endIndex! < t4.invokeIndex) return { run: candidate, call: (name: string) => candidate.calls.find((c) => c.name === name)! };
      }
      throw new Error('no run with T3 then T4 called');
    })();
    const arrivals = world.arrivals.map((arrival) => {
      const script = (arrival.request.input as { script: TaskScript }).script;
      const steps = script.steps.map((step) => ({ ...step, calls: step.calls.map((c) => (c.id === 'T4' ? { ...c, resource: 'ticket' } : c)) }));
      return { ...arrival, request: { ...arrival.request, input: { script: { ...script, steps } } as unknown as typeof arrival.request.input } };
    });
    const sameLane = { ...world, arrivals };
    expectClean(i21ToolGraph, sameLane);
    const t3 = call('T3');
    const edited = withEntries(sameLane, (entries) => {
      entries[t3.endIndex!] = asNote(entries[t3.endIndex!]!);
      return entries;
    });
    expectViolation(
      i21ToolGraph,
      edited,
      new RegExp(`I21 overlap: task ${graph.taskId} g${graph.generation}: writes t${graph.taskId}-s0-T3 \\(history ${t3.invokeIndex}\\.\\.open\\) and t${graph.taskId}-s0-T4 \\(history ${call('T4').invokeIndex}\\.\\.\\S+\\) of lane ticket were in flight at once`),
    );
    // The same calls made by two incarnations of one generation (a power loss rolled back the first's
    // claim, and the first died with T3 open) are two runs: no overlap.
    const t4 = call('T4');
    const apart = withEntries(edited, (entries) =>
      entries.map((entry) => (entry.type !== 'note' && (entry.index === t4.invokeIndex || (entry.type !== 'invoke' && entry.invokeIndex === t4.invokeIndex)) ? { ...entry, actor: `${entry.actor}-after-power-loss` } : entry)),
    );
    expectClean(i21ToolGraph, apart);
  });

  it('cycle-ran: fails when a refused plan called a tool, ended otherwise than invalid_plan, was retried or ended done', async () => {
    const world = await run('1');
    const x1 = taskOfTopic(world, 'bad-plan');
    expect(world.final.tasks.find((task) => task.id === x1)!.state).toBe('failed');
    const called = withEntries(world, (entries) => [
      ...entries,
      { type: 'invoke', index: entries.length, timeMs: entries.at(-1)!.timeMs, actor: 'w0#1', op: 'tool', taskId: x1, generation: 1, data: { call: `t${x1}-s0-A`, tool: 'lookup_order' } },
    ]);
    expectViolation(i21ToolGraph, called, new RegExp(`I21 cycle-ran: task ${x1}: t${x1}-s0-A of step 0, whose plan is refused \\(a cycle .*\\), was called`));
    const otherClass = withEvents(world, (events) => events.map((event) => (event.taskId === x1 && event.type === 'failed' ? { ...event, data: { ...event.data, errorClass: 'business_error' } } : event)));
    expectViolation(i21ToolGraph, otherClass, new RegExp(`I21 cycle-ran: task ${x1}: reached step 0, whose plan is refused .*, and ended failed business_error, not invalid_plan`));
    const retried = withEvents(world, (events) => [...events, { ...events.find((event) => event.taskId === x1 && event.type === 'failed')!, id: 1_000_000, type: 'retry_scheduled' }]);
    expectViolation(i21ToolGraph, retried, new RegExp(`I21 cycle-ran: task ${x1}: a failure invalid_plan was retried`));
    const done = { ...world, final: { ...world.final, tasks: world.final.tasks.map((task) => (task.id === x1 ? { ...task, state: 'done' as const } : task)) } };
    expectViolation(i21ToolGraph, done, new RegExp(`I21 cycle-ran: task ${x1}: ended done although its step 0's plan is refused`));
    // A valid graph refused: a T1..T4 task's end rewritten to invalid_plan.
    const g1 = taskOfTopic(world, 'ticket-1');
    const refusedValid = withEvents(
      { ...world, final: { ...world.final, tasks: world.final.tasks.map((task) => (task.id === g1 ? { ...task, state: 'failed' as const } : task)) } },
      (events) => [...events, { ...events.find((event) => event.taskId === x1 && event.type === 'failed')!, id: 1_000_000, taskId: g1 }],
    );
    expectViolation(i21ToolGraph, refusedValid, new RegExp(`I21 cycle-ran: task ${g1}: ended failed invalid_plan, but no step it reached has a refused plan`));
  });

  it('unrecorded: fails when a graph call\'s tool_result event has no recorded answer in its generation', async () => {
    const world = await run('1');
    const { run: graph, call } = fullRun(world);
    const t1 = call('T1');
    const edited = withEntries(world, (entries) => {
      entries[t1.endIndex!] = asNote(entries[t1.endIndex!]!);
      return entries;
    });
    expectViolation(i21ToolGraph, edited, new RegExp(`I21 unrecorded: task ${graph.taskId} g${graph.generation}: tool_result event \\d+ of t${graph.taskId}-s0-T1, but the history records no answer`));
    // A write's result the ledger gave (no tool call) is not unrecorded; one in a generation nobody ran is.
    const event = world.events.find((e) => e.type === 'tool_result' && e.taskId === graph.taskId && e.data.toolCallId === `t${graph.taskId}-s0-T2`)!;
    const ghost = withEvents(world, (events) => [...events, { ...event, id: 1_000_000, generation: 99 }]);
    expectViolation(i21ToolGraph, ghost, new RegExp(`I21 unrecorded: task ${graph.taskId} g99: tool_result event 1000000 of t${graph.taskId}-s0-T2`));
  });

  it('outcome: fails when the last checkpoint\'s results disagree with the graph', async () => {
    const world = await run('1');
    const g1 = taskOfTopic(world, 'ticket-1');
    type Result = { toolCallId: string; status?: string; reason?: string; error?: { errorClass: string; message: string } };
    const edit = (change: (result: Result) => Result): WorldResult => {
      const checkpoints = new Map(world.checkpoints);
      const checkpoint = structuredClone(checkpoints.get(g1)!);
      const state = checkpoint.state as { messages: { role: string; step: number; results?: Result[] }[] };
      const message = state.messages.find((m) => m.role === 'tool' && m.step === 0)!;
      message.results = message.results!.map(change);
      checkpoints.set(g1, checkpoint);
      return { ...world, checkpoints };
    };
    const id = (name: string) => `t${g1}-s0-${name}`;
    const original = (world.checkpoints.get(g1)!.state as { messages: { role: string; step: number; results?: Result[] }[] }).messages.find((m) => m.role === 'tool' && m.step === 0)!.results!;
    expect(original.map((result) => result.toolCallId)).toEqual(['T1', 'T2', 'T3', 'T4'].map(id));
    // T1 failed, yet T3 (which depends on it) recorded ok.
    const t1Failed = edit((result) => (result.toolCallId === id('T1') ? { toolCallId: result.toolCallId, status: 'failed', error: { errorClass: 'business_error', message: 'no' } } : { ...result, status: 'ok' }));
    expectViolation(i21ToolGraph, t1Failed, new RegExp(`I21 outcome: task ${g1} step 0: ${id('T3')} recorded ok, but its dependencies are ${id('T1')}=failed, ${id('T2')}=ok`));
    // Skipped for a failed dependency, though every dependency is ok.
    const skipped = edit((result) => (result.toolCallId === id('T4') ? { toolCallId: result.toolCallId, status: 'skipped', reason: 'dependency_failed' } : { ...result, status: 'ok' }));
    expectViolation(i21ToolGraph, skipped, new RegExp(`I21 outcome: task ${g1} step 0: ${id('T4')} recorded skipped \\(dependency_failed\\), but its dependencies are ${id('T3')}=ok`));
    // A retryable class is no definite failure: the attempt should have failed instead.
    const retryable = edit((result) => (result.toolCallId === id('T4') ? { toolCallId: result.toolCallId, status: 'failed', error: { errorClass: 'tool_timeout', message: 'slow' } } : { ...result, status: 'ok' }));
    expectViolation(i21ToolGraph, retryable, new RegExp(`I21 outcome: task ${g1} step 0: ${id('T4')} recorded failed tool_timeout, which is not a definite`));
    const missing = edit((result) => result).checkpoints;
    const dropped = new Map(missing);
    const checkpoint = structuredClone(dropped.get(g1)!);
    const message = (checkpoint.state as { messages: { role: string; step: number; results?: Result[] }[] }).messages.find((m) => m.role === 'tool' && m.step === 0)!;
    message.results = message.results!.filter((result) => result.toolCallId !== id('T2'));
    dropped.set(g1, checkpoint);
    expectViolation(i21ToolGraph, { ...world, checkpoints: dropped }, new RegExp(`I21 outcome: task ${g1} step 0: ${id('T2')} has no result`));
  });
});

describe('I21 on a team agent module\'s graphs (T2)', () => {
  // The example's model decides, at step 1, update_ticket then email_customer depending on it: the graph
  // I21 judges is the one the harness noted as it left the model, not one read back from the core.
  let world: WorldResult;
  beforeAll(async () => {
    const agent = await loadSimAgent('examples/ticket-agent/correct.ts');
    world = (await simulate({ scenario: agent.scenario!, seed: '5', agent })).world;
  });

  it('reads each graph from the model\'s decisions and passes the real run', () => {
    const steps = [...graphSteps(world).values()].flat();
    expect(steps.length).toBeGreaterThan(3);
    for (const step of steps) {
      expect(step.step).toBe(1);
      const [update, email] = step.calls;
      expect(update).toMatchObject({ callId: `t${step.taskId}-s1-update`, tool: 'update_ticket', readOnly: false, lane: `ticket:${update!.lane!.slice('ticket:'.length)}`, dependsOn: [] });
      expect(email).toMatchObject({ callId: `t${step.taskId}-s1-email`, tool: 'email_customer', readOnly: false, dependsOn: [update!.callId] });
    }
    expect([...graphRuns(world).values()].some((run) => run.calls.length === 2)).toBe(true);
    expectClean(i21ToolGraph, world);
  });

  it('fails a history in which the e-mail started although the update it depends on failed definitely', () => {
    const run = [...graphRuns(world).values()].find((candidate) => {
      const update = candidate.calls.find((call) => call.name.endsWith('-update'));
      return update?.outcome === 'ok' && candidate.calls.some((call) => call.name.endsWith('-email'));
    });
    expect(run).toBeDefined();
    const update = run!.calls.find((call) => call.name.endsWith('-update'))!;
    const email = run!.calls.find((call) => call.name.endsWith('-email'))!;
    const edited = withEntries(world, (entries) =>
      entries.map((entry) => (entry.index === update.endIndex ? ({ ...entry, type: 'fail', reason: 'business_error' } as HistoryEntry) : entry)),
    );
    expectViolation(i21ToolGraph, edited, new RegExp(`I21 dependent-ran: task ${run!.taskId} g${run!.generation}: ${email.callId} started .* although ${update.callId}, which it depends on, failed business_error`));
  });

  it('fails a history in which two writes of one lane of an agent\'s graph overlapped', () => {
    // The model's decision edited so both calls write one resource: the e-mail, started after the update's answer, is moved before it.
    const run = [...graphRuns(world).values()].find((candidate) => candidate.calls.length === 2 && candidate.calls.every((call) => call.outcome === 'ok'))!;
    const [update, email] = [...run.calls].sort((a, b) => a.invokeIndex - b.invokeIndex);
    const edited = withEntries(world, (entries) =>
      entries.map((entry) => {
        const data = entry.data as { step: number; calls: { resource?: string; dependsOn?: string[] }[] };
        if (entry.type !== 'note' || entry.kind !== 'model-decision' || entry.taskId !== run.taskId || data.step !== 1) return entry;
        return { ...entry, data: { ...data, calls: data.calls.map((call) => ({ ...call, resource: 'one-lane', dependsOn: [] })) } } as HistoryEntry;
      }),
    );
    // Only the lane changed so far: the real run kept the two writes apart (the update answered before the e-mail started).
    expect(update!.endIndex!).toBeLessThan(email!.invokeIndex);
    expectClean(i21ToolGraph, edited);
    // Now the update's answer comes after the e-mail started: the two writes of lane one-lane overlap.
    const overlapped = withEntries(edited, (entries) => {
      const answer = entries[update!.endIndex!]!;
      const start = entries[email!.invokeIndex]!;
      entries[update!.endIndex!] = { ...start, index: answer.index };
      entries[email!.invokeIndex] = { ...answer, index: start.index };
      return entries;
    });
    expectViolation(i21ToolGraph, overlapped, new RegExp(`I21 overlap: task ${run.taskId} g${run.generation}: writes .* of lane one-lane were in flight at once`));
  });
});
