import { resolveConfig } from '../../src/queue/config.ts';
import { score } from '../../src/queue/scoring.ts';
import { LIVE_STATES, OCCUPYING_STATES } from '../../src/queue/states.ts';
import type { Checkpoint, QueueConfig, TaskEvent, TaskState, TaskView, Tier, Usage } from '../../src/queue/types.ts';
import { requestKey } from '../../src/worker/fingerprint.ts';
import { ExternalProvider } from '../actors/provider.ts';
import type { TaskScript } from '../actors/scripted-model.ts';
import { WRITE_TOOLS } from '../actors/tools.ts';
import { emptyPlan } from '../faults/plan.ts';
import { VirtualClock } from '../clock.ts';
import { History, type OperationFields } from '../history.ts';
import type { JsonValue } from '../canonical-json.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import type { WorldResult } from '../world.ts';
import type { Arrival } from '../workload.ts';

const mixed = catalogueScenario('mixed');

/**
 * A small, hand-driven stand-in for a finished World, for checker tests (S7: every checker comes with
 * the bad history that makes it fail). It keeps the same books the real world leaves: a history with
 * `ev` cursors, an event log in commit order, holds, checkpoints, the effect ledger, dead letters and
 * the provider's record. Its methods make the moves a correct queue would make; a test breaks one of
 * them with `rawEvent`, `call` or by editing the result of `build()`.
 */

export const FAKE_EPOCH_MS = 1_700_000_000_000;

export interface FakeTaskSpec {
  tenant?: string;
  topic?: string;
  version?: number;
  priority?: number;
  tier?: Tier;
  deadline?: number;
  script?: TaskScript;
}

interface FakeTask extends TaskView {
  script: TaskScript;
  seq: number;
  usage: Usage;
  firstClaimAt?: number;
}

/** A one-step script: one read-only call, one write (unless `write` is false), then the answer. */
export function fakeScript(label: string, write = true): TaskScript {
  const calls: TaskScript['steps'][number]['calls'] = [{ tool: 'lookup_order', args: { ref: `${label}/s0`, n: 1 } }];
  if (write) calls.push({ tool: 'confirm_order', args: { order: label, items: [{ id: 'item-a', qty: 1 }] } });
  return {
    steps: [{ calls, inputTokens: 1_000, outputTokens: 200 }],
    answer: { status: 'needs_human', summary: `investigated ${label}` },
    finalTokens: { inputTokens: 800, outputTokens: 100 },
  };
}

export class FakeWorld {
  readonly config: QueueConfig;
  readonly history: History;
  readonly provider: ExternalProvider;
  readonly events: TaskEvent[] = [];
  readonly tasks = new Map<number, FakeTask>();
  readonly holds: WorldResult['holds'] = [];
  readonly deadLetters: WorldResult['deadLetters'] = [];
  readonly effects: WorldResult['effects'] = [];
  readonly checkpoints = new Map<number, Checkpoint | undefined>();
  readonly arrivals: Arrival[] = [];
  readonly enqueued: WorldResult['enqueued'] = [];
  readonly rejections: WorldResult['final']['rejections'] = [];
  /** The one virtual clock, moved by hand: `advance` moves its timeline, `jumpClock` its wall reading. */
  readonly clock = new VirtualClock(FAKE_EPOCH_MS);
  private checkpointSeqs = new Map<number, number>();

  constructor(private readonly queue: Partial<QueueConfig> = {}) {
    this.config = resolveConfig(queue);
    this.history = new History({ now: () => this.clock.monotonicNow() });
    this.provider = new ExternalProvider(this.history);
  }

  /** The wall clock the queue reads: the timeline plus clock jumps. */
  get now(): number {
    return this.clock.now();
  }

  get cursor(): number {
    return this.events.length === 0 ? 0 : this.events[this.events.length - 1]!.id;
  }

  advance(ms: number): this {
    this.clock.advanceBy(ms);
    return this;
  }

  jumpClock(deltaMs: number): this {
    this.history.note('clock-jump', 'faults', { deltaMs });
    this.clock.jump(deltaMs);
    return this;
  }

  note(kind: string, actor: string, data?: JsonValue): this {
    this.history.note(kind, actor, data);
    return this;
  }

  task(id: number): FakeTask {
    const task = this.tasks.get(id);
    if (task === undefined) throw new Error(`fake world has no task ${id}`);
    return task;
  }

  /** Appends an event exactly as given (author columns included): the tool for writing bad logs. */
  rawEvent(taskId: number, type: string, data: Record<string, unknown>, by?: { workerId: string; generation: number }): TaskEvent {
    const task = this.tasks.get(taskId);
    const seq = task === undefined ? 1 : ++task.seq;
    const event: TaskEvent = { id: this.cursor + 1, taskId, seq, type, at: this.now, data };
    if (by !== undefined) {
      event.workerId = by.workerId;
      event.generation = by.generation;
    }
    this.events.push(event);
    const to = data.to;
    if (task !== undefined && typeof to === 'string') task.state = to as TaskState;
    return event;
  }

  /** Records one operation: invoke, then ok or fail with the event cursor after `body` ran. */
  call(actor: string, op: string, fields: OperationFields, body: () => { ok: true; fields?: OperationFields; outcome?: string } | { ok: false; reason: string }): this {
    const invoke = this.history.invoke(actor, op, fields);
    const result = body();
    const ev = this.cursor;
    if (result.ok) {
      const extra = (result.fields?.data ?? {}) as Record<string, JsonValue>;
      this.history.ok(invoke, { ...result.fields, data: result.outcome === undefined ? { ...extra, ev } : { ...extra, ev, outcome: result.outcome } });
    }
    else this.history.fail(invoke, result.reason, { data: { ev } });
    return this;
  }

  enqueue(spec: FakeTaskSpec = {}): number | undefined {
    const tenant = spec.tenant ?? 'acme';
    const topic = spec.topic ?? `topic-${this.arrivals.length + 1}`;
    const version = spec.version ?? 1;
    const label = `${tenant}/${topic}/v${version}`;
    const request = { tenant, topic, version, priority: spec.priority ?? 10, tier: spec.tier ?? 'standard', input: { script: spec.script ?? fakeScript(label) } } as Arrival['request'];
    if (spec.deadline !== undefined) request.deadline = spec.deadline;
    const arrival: Arrival = { atMs: this.clock.monotonicNow() - FAKE_EPOCH_MS, request };
    this.arrivals.push(arrival);
    let taskId: number | undefined;
    this.call('client', 'enqueue', { data: { tenant, topic, version } }, () => {
      const live = [...this.tasks.values()].filter((task) => (LIVE_STATES as string[]).includes(task.state)).length;
      const older = [...this.tasks.values()].filter((task) => task.tenant === tenant && task.topic === topic && task.version < version && task.state === 'ready');
      if (older.length === 0 && live >= this.config.capacity) {
        this.rejections.push({ tenant, topic, version, reason: 'queue_full', at: this.now });
        this.enqueued.push({ arrival, result: { ok: false, error: 'queue_full', message: 'full' } });
        return { ok: false, reason: 'queue_full' };
      }
      taskId = this.tasks.size + 1;
      this.insert(taskId, request);
      // Q2: a version older than one already inserted arrives late and is superseded by its insert.
      const newest = Math.max(0, ...[...this.tasks.values()].filter((task) => task.tenant === tenant && task.topic === topic && task.id !== taskId).map((task) => task.version));
      if (newest > version) {
        this.end(taskId, 'superseded', { to: 'superseded', reason: 'newer_version_queued', latestVersion: newest });
        this.enqueued.push({ arrival, result: { ok: true, taskId, status: 'superseded' } });
        return { ok: true, fields: { taskId }, outcome: 'superseded' };
      }
      for (const old of older) this.end(old.id, 'superseded', { from: 'ready', to: 'superseded', byTaskId: taskId });
      this.rawEvent(taskId, 'enqueued', { to: 'ready', version, priority: request.priority, tier: request.tier, replaced: older.map((old) => old.id) });
      const status = older.length > 0 ? 'replaced' : 'enqueued';
      this.enqueued.push({ arrival, result: { ok: true, taskId, status } });
      return { ok: true, fields: { taskId }, outcome: status };
    });
    return taskId;
  }

  private insert(id: number, request: Arrival['request']): void {
    const tier = request.tier ?? 'standard';
    const task: FakeTask = {
      id,
      tenant: request.tenant,
      topic: request.topic,
      version: request.version,
      priority: request.priority,
      state: 'ready',
      generation: 0,
      attempts: 0,
      deliveries: 0,
      tier,
      cancelRequested: false,
      enqueuedAt: this.now,
      notBefore: this.now,
      script: (request.input as { script: TaskScript }).script,
      seq: 0,
      usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 },
    };
    if (request.deadline !== undefined) task.deadline = request.deadline;
    this.tasks.set(id, task);
    this.checkpoints.set(id, undefined);
    this.holds.push({ taskId: id, tenant: task.tenant, tier, credits: this.config.tierHolds[tier], state: 'held', chargedCredits: null, usage: null, reason: null, heldAt: this.now, closedAt: null });
  }

  /** Closes a task's hold now: settled with its checkpointed usage, or released if it never checkpointed. */
  private closeHold(taskId: number, reason: string): 'settled' | 'released' {
    const hold = this.holds.find((candidate) => candidate.taskId === taskId)!;
    const checkpoint = this.checkpoints.get(taskId);
    hold.state = checkpoint === undefined ? 'released' : 'settled';
    hold.usage = checkpoint?.usage ?? null;
    hold.chargedCredits = checkpoint === undefined ? 0 : Math.ceil((checkpoint.usage.inputTokens + checkpoint.usage.outputTokens) / this.config.tokensPerCredit);
    hold.reason = reason;
    hold.closedAt = this.now;
    return hold.state;
  }

  /** The reconciler's closure of a hold with no live run (R4, holdTtlMs): no event, usage so far. */
  releaseHold(taskId: number, reason = 'hold_ttl'): this {
    return this.call('supervisor', 'reconcile', {}, () => {
      this.closeHold(taskId, reason);
      // What the supervisor records of a reconcile pass (sim/actors/supervisor.ts).
      return { ok: true, fields: { data: { requeued: 0, releasedHolds: 1 } } };
    });
  }

  /** A transition that ends the run: the hold is settled (or released) in the same step (R4). */
  private end(taskId: number, type: string, data: Record<string, unknown>, by?: { workerId: string; generation: number }): TaskEvent {
    const hold = this.holds.find((candidate) => candidate.taskId === taskId)!;
    const settlement = hold.state === 'held' ? this.closeHold(taskId, String(data.reason ?? type)) : 'already_closed';
    const event = this.rawEvent(taskId, type, { ...data, settlement }, by);
    const reason = data.reason;
    if (data.to === 'failed' && typeof reason === 'string' && ['attempts_exhausted', 'deliveries_exhausted', 'retry_age_exceeded'].includes(reason)) {
      const task = this.task(taskId);
      this.deadLetters.push({ taskId, tenant: task.tenant, topic: task.topic, version: task.version, reason, reasons: [reason], at: this.now });
    }
    return event;
  }

  private occupied(tenant?: string): number {
    return [...this.tasks.values()].filter((task) => (OCCUPYING_STATES as string[]).includes(task.state) && (tenant === undefined || task.tenant === tenant)).length;
  }

  /** A successful claim of `taskId` by `workerId` (the test chooses the task; I5 judges the choice). */
  claim(workerId: string, taskId: number): number {
    const task = this.task(taskId);
    this.call(workerId, 'claim', {}, () => {
      task.generation += 1;
      task.attempts += 1;
      task.deliveries += 1;
      task.workerId = workerId;
      task.leaseUntil = this.now + this.config.leaseMs;
      task.firstClaimAt ??= this.now;
      const data = {
        from: 'ready',
        to: 'running',
        workerId,
        generation: task.generation,
        attempt: task.attempts,
        leaseUntil: task.leaseUntil,
        score: score(task.priority, task.enqueuedAt, this.now, this.config),
        queueWaitMs: this.now - task.enqueuedAt,
      };
      this.rawEvent(taskId, 'claimed', data, { workerId, generation: task.generation });
      return { ok: true, fields: { taskId, generation: task.generation } };
    });
    return task.generation;
  }

  refuseClaim(workerId: string, reason: 'empty' | 'quota'): this {
    return this.call(workerId, 'claim', {}, () => ({ ok: false, reason }));
  }

  private holderWrite(workerId: string, taskId: number, op: string, data: JsonValue | undefined, write: (by: { workerId: string; generation: number }) => string | undefined): this {
    const task = this.task(taskId);
    const by = { workerId, generation: task.generation };
    const fields: OperationFields = { taskId, generation: task.generation };
    if (data !== undefined) fields.data = data;
    return this.call(workerId, op, fields, () => {
      if (task.state !== 'running' || task.workerId !== workerId) return { ok: false, reason: 'stale_lease' };
      const outcome = write(by);
      return outcome === undefined ? { ok: true } : { ok: true, outcome };
    });
  }

  /** A holder write from a (worker, generation) that no longer holds the lease: refused, no trace. */
  staleWrite(workerId: string, taskId: number, generation: number, op = 'checkpoint'): this {
    return this.call(workerId, op, { taskId, generation }, () => ({ ok: false, reason: 'stale_lease' }));
  }

  heartbeat(workerId: string, taskId: number): this {
    return this.holderWrite(workerId, taskId, 'heartbeat', undefined, () => {
      this.task(taskId).leaseUntil = this.now + this.config.leaseMs;
      return undefined;
    });
  }

  checkpoint(workerId: string, taskId: number, kind: 'A' | 'B', step: number, addUsage?: { inputTokens: number; outputTokens: number }): this {
    return this.holderWrite(workerId, taskId, 'checkpoint', { kind, step }, (by) => {
      const task = this.task(taskId);
      if (addUsage !== undefined) {
        task.usage = { inputTokens: task.usage.inputTokens + addUsage.inputTokens, outputTokens: task.usage.outputTokens + addUsage.outputTokens, modelCalls: task.usage.modelCalls + 1 };
      }
      const seq = (this.checkpointSeqs.get(taskId) ?? 0) + 1;
      this.checkpointSeqs.set(taskId, seq);
      const event = this.rawEvent(taskId, 'checkpoint', { kind, step, checkpointSeq: seq, generation: by.generation, usage: { ...task.usage } }, by);
      this.checkpoints.set(taskId, { taskId, seq, generation: by.generation, kind, step, state: { step, messages: [] }, usage: { ...task.usage }, at: this.now, eventSeq: event.seq });
      return undefined;
    });
  }

  toolResult(workerId: string, taskId: number, tool: string, step = 0): this {
    return this.holderWrite(workerId, taskId, 'appendEvent', { type: 'tool_result' }, (by) => {
      this.rawEvent(taskId, 'tool_result', { toolCallId: `t${taskId}-s${step}`, tool, step, readOnly: !(WRITE_TOOLS as readonly string[]).includes(tool) }, by);
      return undefined;
    });
  }

  /** A write tool call: the provider acts (or repeats), then the holder records it in the ledger (R3). */
  effect(workerId: string, taskId: number, tool: string, args: unknown): this {
    const task = this.task(taskId);
    const key = requestKey(taskId, tool, args);
    this.provider.execute({ requestKey: key, action: tool, tenant: task.tenant, taskId, generation: task.generation, actor: workerId, atMs: this.clock.monotonicNow() }, args);
    return this.holderWrite(workerId, taskId, 'recordEffect', { requestKey: key }, (by) => {
      const repeated = this.effects.some((row) => row.requestKey === key);
      if (!repeated) this.effects.push({ requestKey: key, taskId, tenant: task.tenant, action: tool, generation: by.generation, at: this.now });
      this.rawEvent(taskId, 'effect_recorded', { requestKey: key, action: tool, repeated }, by);
      return undefined;
    });
  }

  complete(workerId: string, taskId: number): this {
    return this.holderWrite(workerId, taskId, 'complete', undefined, (by) => {
      const task = this.task(taskId);
      const newer = [...this.tasks.values()].some((other) => other.tenant === task.tenant && other.topic === task.topic && other.version > task.version);
      const outcome = newer ? 'stale_input' : 'done';
      task.outcome = outcome;
      task.result = { answer: task.script.answer, usage: task.usage };
      this.end(taskId, 'completed', { from: 'running', to: 'done', outcome, workerId, generation: by.generation, cancelRequested: false }, by);
      return outcome;
    });
  }

  /** `fail` with a retryable class: back to ready after backoffMs, or failed when attempts are spent. */
  fail(workerId: string, taskId: number, backoffMs = 1_000): this {
    return this.holderWrite(workerId, taskId, 'fail', { errorClass: 'transient_network' }, (by) => {
      const task = this.task(taskId);
      if (task.attempts >= this.config.maxAttempts) {
        this.end(taskId, 'failed', { from: 'running', to: 'failed', workerId, generation: by.generation, errorClass: 'transient_network', reason: 'attempts_exhausted' }, by);
        return 'failed';
      }
      task.notBefore = this.now + backoffMs;
      this.rawEvent(taskId, 'retry_scheduled', { from: 'running', to: 'ready', workerId, generation: by.generation, errorClass: 'transient_network', backoffMs, attempt: task.attempts }, by);
      return 'retry';
    });
  }

  /** The supervisor's scan: every running task past its lease becomes uncertain (Q10). */
  expireLeases(): this {
    return this.call('supervisor', 'expireLeases', {}, () => {
      for (const task of this.tasks.values()) {
        if (task.state === 'running' && (task.leaseUntil ?? Infinity) <= this.now) {
          this.rawEvent(task.id, 'lease_expired', { from: 'running', to: 'uncertain', workerId: task.workerId, generation: task.generation, leaseUntil: task.leaseUntil });
        }
      }
      return { ok: true };
    });
  }

  confirmStopped(taskId: number, actor = 'supervisor'): this {
    const task = this.task(taskId);
    return this.call(actor, 'confirmStopped', { taskId, generation: task.generation }, () => {
      if (task.state !== 'uncertain') return { ok: false, reason: 'not_uncertain' };
      if (task.attempts >= this.config.maxAttempts) {
        this.end(taskId, 'stop_confirmed', { from: 'uncertain', to: 'failed', source: 'supervisor', generation: task.generation, reason: 'attempts_exhausted' });
        return { ok: true, outcome: 'failed' };
      }
      this.rawEvent(taskId, 'stop_confirmed', { from: 'uncertain', to: 'ready', source: 'supervisor', generation: task.generation, reason: 'stopped' });
      return { ok: true, outcome: 'ready' };
    });
  }

  /** Runs the claimed task's script to the end as the current holder: what a fault-free worker does. */
  runToDone(workerId: string, taskId: number): this {
    const task = this.task(taskId);
    task.script.steps.forEach((step, index) => {
      this.advance(500).checkpoint(workerId, taskId, 'A', index, step);
      for (const call of step.calls) {
        this.advance(200);
        if ((WRITE_TOOLS as readonly string[]).includes(call.tool)) this.effect(workerId, taskId, call.tool, call.args);
        this.toolResult(workerId, taskId, call.tool, index);
      }
      this.checkpoint(workerId, taskId, 'B', index + 1);
    });
    this.advance(500).checkpoint(workerId, taskId, 'A', task.script.steps.length, task.script.finalTokens);
    return this.complete(workerId, taskId);
  }

  build(overrides: Partial<WorldResult> = {}): WorldResult {
    const tasks: TaskView[] = [...this.tasks.values()].map(({ script: _script, seq: _seq, usage: _usage, firstClaimAt: _first, ...view }) => ({ ...view }));
    const countsByState = { ready: 0, running: 0, uncertain: 0, done: 0, failed: 0, superseded: 0, cancelled: 0, expired: 0 } as Record<TaskState, number>;
    for (const task of tasks) countsByState[task.state] += 1;
    const byTenant: Record<string, number> = {};
    for (const task of tasks) if ((OCCUPYING_STATES as string[]).includes(task.state)) byTenant[task.tenant] = (byTenant[task.tenant] ?? 0) + 1;
    return {
      scenario: { ...mixed, name: 'fake', queue: this.queue },
      seed: 'fake',
      plan: emptyPlan(),
      arrivals: this.arrivals,
      enqueued: this.enqueued,
      history: this.history,
      provider: this.provider,
      final: {
        at: this.now,
        tasks,
        countsByState,
        live: countsByState.ready + countsByState.running + countsByState.uncertain,
        occupied: { global: this.occupied(), byTenant },
        rejections: this.rejections,
      },
      events: this.events,
      checkpoints: this.checkpoints,
      holds: this.holds,
      deadLetters: this.deadLetters,
      effects: this.effects,
      outcomes: [],
      drained: true,
      loopEvents: 0,
      startMs: FAKE_EPOCH_MS,
      safetyEndMs: this.clock.monotonicNow(),
      endMs: this.clock.monotonicNow(),
      ...overrides,
    };
  }
}

/** The brief's name for the builder: `fakeWorld(queueConfig)` starts an empty fake run. */
export function fakeWorld(queue: Partial<QueueConfig> = {}): FakeWorld {
  return new FakeWorld(queue);
}
