import { SqliteStore } from '../../../src/store/sqlite-store.ts';
import { openWorkQueue } from '../../../src/work-queue.ts';
import type { ClaimedTask, QueueConfig, Tier, Usage, WorkQueue } from '../../../src/queue/types.ts';
import { requestKey } from '../../../src/worker/fingerprint.ts';
import { gatedQueue } from '../../actors/gated-queue.ts';
import { Fleet, type Connection } from '../../store/fleet.ts';
import { Incarnation } from '../../actors/incarnation.ts';
import { ExternalProvider } from '../../actors/provider.ts';
import type { TaskScript } from '../../actors/scripted-model.ts';
import { WRITE_TOOLS } from '../../actors/tools.ts';
import type { JsonValue } from '../../canonical-json.ts';
import { epochMsDefault, VirtualClock } from '../../clock.ts';
import { emptyPlan } from '../../faults/plan.ts';
import { History } from '../../history.ts';
import { SeededRandom } from '../../random.ts';
import { catalogueScenario } from '../../scenarios/registry.ts';
import type { WorldResult } from '../../world.ts';
import type { Arrival } from '../../workload.ts';

const mixed = catalogueScenario('mixed');

/**
 * The good histories of the checker tests (S7), made by the real queue: a test drives `openWorkQueue`
 * on ':memory:' by hand, on the one virtual clock, and every call is recorded as the simulator records
 * it (worker calls through the simulator's own `gatedQueue`; the client's enqueue and the supervisor's
 * calls as `World` and `Supervisor` record them, with the event cursor `ev`). `build()` reads the final
 * database as `World` does. A test then edits that history or final state to make it bad, so a checker
 * is shown to fail on exactly the defect the edit introduces and to pass the real queue's own books.
 *
 * Every queue call is awaited: the helpers stay right whether the queue answers now or in a promise.
 *
 * A test helper, not part of the judge: it drives the judged, so it may use src/. It plays the worker,
 * and so computes request keys with src's requestKey as src/worker/run.ts does: the checkers compare
 * those keys with their own (spec-rules.ts), and a drift between the two shows in these histories.
 */

/** A one-step script: one read-only call, one write (unless `write` is false), then the answer. */
export function oneStepScript(label: string, write = true): TaskScript {
  const calls: TaskScript['steps'][number]['calls'] = [{ tool: 'lookup_order', args: { ref: `${label}/s0`, n: 1 } }];
  if (write) calls.push({ tool: 'confirm_order', args: { order: label, items: [{ id: 'item-a', qty: 1 }] } });
  return {
    steps: [{ calls, inputTokens: 1_000, outputTokens: 200 }],
    answer: { status: 'needs_human', summary: `investigated ${label}` },
    finalTokens: { inputTokens: 800, outputTokens: 100 },
  };
}

export interface RealTaskSpec {
  tenant?: string;
  topic?: string;
  version?: number;
  priority?: number;
  tier?: Tier;
  deadline?: number;
  script?: TaskScript;
}

/** What a holder knows of its run: the lease it got, and the usage its checkpoints carry. */
interface Held {
  task: ClaimedTask;
  usage: Usage;
}

export class RealRun {
  readonly clock = new VirtualClock(epochMsDefault);
  readonly history = new History({ now: () => this.clock.monotonicNow() });
  readonly provider = new ExternalProvider(this.history);
  readonly arrivals: Arrival[] = [];
  readonly enqueued: WorldResult['enqueued'] = [];
  readonly queue: WorkQueue;
  private readonly incarnations = new Map<string, Incarnation>();
  private readonly held = new Map<string, Held>();

  private readonly store: SqliteStore;
  private readonly connection: Connection;

  /**
   * How this worker derives a request key: src's requestKey unless a test gives another, to show that
   * I8 judges executions per intended effect and not the key's format.
   */
  keyOf: (taskId: number, tool: string, args: unknown, generation: number) => string = (taskId, tool, args) => requestKey(taskId, tool, args);

  constructor(readonly config: Partial<QueueConfig> = {}) {
    // The run opens the store itself, as the world does, so worker calls record their event cursor.
    this.store = SqliteStore.open(':memory:', { busyTimeoutMs: 1_000, busyRetries: 0 }, () => this.clock.now());
    // One connection whose transactions never wait: a test orders every call itself.
    const fleet = new Fleet({ base: () => this.store, down: () => false, cursor: this.cursor, committed: () => {} }, new SeededRandom('checker-tests').fork('fleet'), { interleave: 0, maxWaitMs: 0 });
    this.connection = fleet.connect({ id: 'real-run', alive: () => true, waiter: { sleep: () => Promise.resolve() } });
    this.queue = openWorkQueue({ db: this.connection, clock: this.clock, random: new SeededRandom('checker-tests').fork('core'), config });
  }

  private readonly cursor = (): number => this.store.readNow('eventCursor', (tx) => tx.eventCursor());

  /** Lets `ms` of virtual time pass. */
  advance(ms: number): this {
    this.clock.advanceBy(ms);
    return this;
  }

  /** The clock-jump fault, recorded as the fault controller records it. */
  jumpClock(deltaMs: number): this {
    this.history.note('clock-jump', 'faults', { deltaMs });
    this.clock.jump(deltaMs);
    return this;
  }

  note(kind: string, actor: string, data?: JsonValue): this {
    this.history.note(kind, actor, data);
    return this;
  }

  /** The queue as worker incarnation `workerId` (e.g. `w0#1`) sees it: every call recorded. */
  as(workerId: string): WorkQueue {
    let incarnation = this.incarnations.get(workerId);
    if (incarnation === undefined) {
      incarnation = new Incarnation(workerId, Number(/^w(\d+)/.exec(workerId)?.[1] ?? 0));
      this.incarnations.set(workerId, incarnation);
    }
    return gatedQueue({ queue: this.queue, connection: this.connection }, incarnation, this.history, { after: () => {} });
  }

  /** The client's enqueue, recorded as `World.enqueue` records it. */
  async enqueue(spec: RealTaskSpec = {}): Promise<number | undefined> {
    const tenant = spec.tenant ?? 'acme';
    const topic = spec.topic ?? `topic-${this.arrivals.length + 1}`;
    const version = spec.version ?? 1;
    const script = spec.script ?? oneStepScript(`${tenant}/${topic}/v${version}`);
    const request: Arrival['request'] = { tenant, topic, version, priority: spec.priority ?? 10, tier: spec.tier ?? 'standard', input: { script } as unknown as Arrival['request']['input'] };
    if (spec.deadline !== undefined) request.deadline = spec.deadline;
    const arrival: Arrival = { atMs: this.clock.elapsedMs, request };
    this.arrivals.push(arrival);
    const invoke = this.history.invoke('client', 'enqueue', { data: { tenant, topic, version } });
    const result = await this.queue.enqueue(request);
    this.enqueued.push({ arrival, result });
    const ev = await this.queue.eventCursor();
    if (result.ok) this.history.ok(invoke, { taskId: result.taskId, data: { outcome: result.status, ev } });
    else this.history.fail(invoke, result.error, { data: { ev } });
    return result.ok ? result.taskId : undefined;
  }

  /** A claim by `workerId` that may be refused (recorded either way); a granted one is held as by `claim`. */
  async tryClaim(workerId: string): Promise<ClaimedTask | undefined> {
    const queue = this.as(workerId);
    const result = await queue.claim(workerId);
    if (!result.ok) return undefined;
    const { task } = result;
    // R2, as the worker's resumeState does: a takeover resumes from the newest checkpoint, whichever
    // generation wrote it, and announces itself with a task_resumed event.
    const checkpoint = task.generation === 1 ? undefined : await queue.lastCheckpoint(task.id);
    if (checkpoint !== undefined) {
      await queue.appendEvent(task.id, workerId, task.generation, 'task_resumed', {
        checkpointKind: checkpoint.kind,
        checkpointSeq: checkpoint.seq,
        checkpointEventSeq: checkpoint.eventSeq,
        step: checkpoint.step,
        fromGeneration: checkpoint.generation,
      });
    }
    const usage = checkpoint?.usage ?? { inputTokens: 0, outputTokens: 0, modelCalls: 0 };
    this.held.set(heldKey(workerId, task.id), { task, usage: { ...usage } });
    return task;
  }

  /** A claim by `workerId`; the queue picks the task. Throws when it grants none, or not `expected`. */
  async claim(workerId: string, expected?: number): Promise<ClaimedTask> {
    const task = await this.tryClaim(workerId);
    if (task === undefined) throw new Error(`claim by ${workerId} was refused`);
    if (expected !== undefined && task.id !== expected) throw new Error(`claim by ${workerId} got task ${task.id}, not ${expected}`);
    return task;
  }

  private holding(workerId: string, taskId: number): Held {
    const held = this.held.get(heldKey(workerId, taskId));
    if (held === undefined) throw new Error(`${workerId} never claimed task ${taskId}`);
    return held;
  }

  async heartbeat(workerId: string, taskId: number) {
    const { task } = this.holding(workerId, taskId);
    return await this.as(workerId).heartbeat(taskId, workerId, task.generation);
  }

  /** A checkpoint with the holder's usage so far, plus one model call's tokens when given. */
  async checkpoint(workerId: string, taskId: number, kind: 'A' | 'B', step: number, addUsage?: { inputTokens: number; outputTokens: number }) {
    const held = this.holding(workerId, taskId);
    if (addUsage !== undefined) {
      const { usage } = held;
      held.usage = { inputTokens: usage.inputTokens + addUsage.inputTokens, outputTokens: usage.outputTokens + addUsage.outputTokens, modelCalls: usage.modelCalls + 1 };
    }
    const write = { kind, step, state: { step, messages: [] }, usage: { ...held.usage }, requeueSafe: true };
    return await this.as(workerId).checkpoint(taskId, workerId, held.task.generation, write);
  }

  async toolResult(workerId: string, taskId: number, tool: string, step = 0) {
    const { task } = this.holding(workerId, taskId);
    const readOnly = !(WRITE_TOOLS as readonly string[]).includes(tool);
    return await this.as(workerId).appendEvent(taskId, workerId, task.generation, 'tool_result', { toolCallId: `t${taskId}-s${step}-${tool}`, tool, step, readOnly });
  }

  /** A write tool call as the worker makes it (R3): ledger read, fenced heartbeat, then `sendEffect`. */
  async effect(workerId: string, taskId: number, tool: string, args: unknown) {
    const { task } = this.holding(workerId, taskId);
    const queue = this.as(workerId);
    if ((await queue.effectResult(this.keyOf(taskId, tool, args, task.generation))) !== undefined) return undefined;
    await queue.heartbeat(taskId, workerId, task.generation);
    return await this.sendEffect(workerId, taskId, tool, args);
  }

  /**
   * The write itself, as the simulated tool sends it (sim/actors/tools.ts) and the worker records it:
   * the provider acts (or answers a repeat of the key), then the fenced ledger record. Called alone it
   * is a worker that skipped the ledger read.
   */
  async sendEffect(workerId: string, taskId: number, tool: string, args: unknown) {
    const { task } = this.holding(workerId, taskId);
    const key = this.keyOf(taskId, tool, args, task.generation);
    const sentIndex = this.provider.noteSent({ requestKey: key, taskId, generation: task.generation, actor: workerId });
    const toolCallId = toolCallIdOf(taskId, scriptOf(task), tool, args);
    const operation = { requestKey: key, action: tool, tenant: task.tenant, taskId, generation: task.generation, actor: workerId, atMs: this.clock.monotonicNow(), sentIndex, ...(toolCallId === undefined ? {} : { toolCallId }) };
    const result = this.provider.execute(operation, args);
    return await this.as(workerId).recordEffect(taskId, workerId, task.generation, { requestKey: key, action: tool, result });
  }

  /** The script the task carries (what its scripted model decides). */
  scriptOf(task: ClaimedTask): TaskScript {
    return scriptOf(task);
  }

  async complete(workerId: string, taskId: number) {
    const held = this.holding(workerId, taskId);
    const script = scriptOf(held.task);
    return await this.as(workerId).complete(taskId, workerId, held.task.generation, { answer: script.answer, usage: held.usage });
  }

  /** `fail` with a retryable class: the queue decides between a retry and the end. */
  async fail(workerId: string, taskId: number, errorClass = 'transient_network') {
    const { task } = this.holding(workerId, taskId);
    return await this.as(workerId).fail(taskId, workerId, task.generation, { errorClass: errorClass as 'transient_network', message: 'simulated' });
  }

  /** The supervisor's lease scan, recorded as `Supervisor.scan` records it. */
  async expireLeases(): Promise<number> {
    const invoke = this.history.invoke('supervisor', 'expireLeases');
    const expired = await this.queue.expireLeases();
    this.history.ok(invoke, { data: { expired, ev: await this.queue.eventCursor() } });
    return expired;
  }

  /** The reconciler pass of the supervisor's scan (R5). */
  async reconcile() {
    const invoke = this.history.invoke('supervisor', 'reconcile');
    const reconciled = await this.queue.reconcile();
    this.history.ok(invoke, { data: { ...reconciled, ev: await this.queue.eventCursor() } });
    return reconciled;
  }

  /** The client cancels a task (Q13), recorded as `World.cancel` records it. */
  async cancel(taskId: number) {
    const invoke = this.history.invoke('client', 'cancel', { taskId });
    const result = await this.queue.cancel(taskId);
    const ev = await this.queue.eventCursor();
    if (result.ok) this.history.ok(invoke, { data: { outcome: result.state, ev } });
    else this.history.fail(invoke, result.error, { data: { ev } });
    return result;
  }

  /**
   * The supervisor confirms the stop of the task's holder, which the test says is `holderState`, for
   * the task's current generation unless `generation` names another. `meanwhile` runs between the
   * supervisor's decision (the invoke) and the queue's answer, as another actor's steps would.
   */
  async confirmStopped(taskId: number, holderState: 'dead' | 'paused' | 'alive' = 'dead', generation?: number, meanwhile?: () => void) {
    const task = await this.queue.get(taskId);
    if (task === undefined) throw new Error(`no task ${taskId}`);
    const confirmed = generation ?? task.generation;
    const confirm = this.history.invoke('supervisor', 'confirmStopped', {
      taskId,
      generation: confirmed,
      data: { holder: task.workerId ?? null, holderState, reported: false },
    });
    meanwhile?.();
    const result = await this.queue.confirmStopped(taskId, confirmed, 'supervisor');
    const ev = await this.queue.eventCursor();
    if (result.ok) this.history.ok(confirm, { data: { outcome: result.next, ev } });
    else this.history.fail(confirm, result.error, { data: { ev } });
    return result;
  }

  /** Runs the claimed task's script to the end as its holder: what a fault-free worker does. */
  async runToDone(workerId: string, taskId: number) {
    const script = scriptOf(this.holding(workerId, taskId).task);
    for (const [index, step] of script.steps.entries()) {
      this.advance(500);
      await this.checkpoint(workerId, taskId, 'A', index, step);
      for (const call of step.calls) {
        this.advance(200);
        if ((WRITE_TOOLS as readonly string[]).includes(call.tool)) await this.effect(workerId, taskId, call.tool, call.args);
        await this.toolResult(workerId, taskId, call.tool, index);
      }
      await this.checkpoint(workerId, taskId, 'B', index + 1);
    }
    this.advance(500);
    await this.checkpoint(workerId, taskId, 'A', script.steps.length, script.finalTokens);
    return await this.complete(workerId, taskId);
  }

  /** The finished run, read from the database as `World.finish` reads it; the queue is closed after. */
  async build(overrides: Partial<WorldResult> = {}): Promise<WorldResult> {
    const queue = this.queue;
    const final = await queue.snapshot();
    const checkpoints = new Map<number, Awaited<Awaited<ReturnType<WorkQueue['lastCheckpoint']>>>>();
    for (const task of final.tasks) checkpoints.set(task.id, await queue.lastCheckpoint(task.id));
    const result: WorldResult = {
      scenario: { ...mixed, name: 'real-run', queue: this.config },
      seed: 'checker-tests',
      plan: emptyPlan(),
      arrivals: this.arrivals,
      enqueued: this.enqueued,
      history: this.history,
      provider: this.provider,
      final,
      events: await queue.allEvents(),
      checkpoints,
      holds: await queue.holds(),
      deadLetters: await queue.deadLetters(),
      effects: await queue.effects(),
      creditLedger: await queue.creditLedger(),
      schemaMigrations: await queue.schemaMigrations(),
      incidents: await queue.incidentCandidates({ from: 0, to: Number.MAX_SAFE_INTEGER, minGroupSize: 1 }),
      outcomes: [],
      drained: true,
      loopEvents: 0,
      startMs: this.clock.epochMs,
      safetyEndMs: this.clock.monotonicNow(),
      endMs: this.clock.monotonicNow(),
      ...overrides,
    };
    await queue.close();
    return result;
  }
}

function heldKey(workerId: string, taskId: number): string {
  return `${workerId}:${taskId}`;
}

/** The id the scripted model gives the script's first call of `tool` with `args` (sim/actors/scripted-model.ts), as the simulated tool reports it. */
function toolCallIdOf(taskId: number, script: TaskScript, tool: string, args: unknown): string | undefined {
  const wanted = JSON.stringify(args);
  for (const [step, { calls }] of script.steps.entries()) {
    for (const [index, call] of calls.entries()) if (call.tool === tool && JSON.stringify(call.args) === wanted) return `t${taskId}-s${step}-${call.id ?? `c${index}`}`;
  }
  return undefined;
}

function scriptOf(task: ClaimedTask): TaskScript {
  return (task.input as { script: TaskScript }).script;
}

/** Starts a hand-driven run of the real queue with `config`. */
export function realRun(config: Partial<QueueConfig> = {}): RealRun {
  return new RealRun(config);
}
