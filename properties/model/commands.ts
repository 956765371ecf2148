/**
 * The commands of the model-based test, one per call of the core API (plus resends, new versions and
 * clock steps). Each resolves its abstract arguments against the model when it runs (steps.ts).
 */
import { observe } from './observe.ts';
import type { ErrorClass } from '../../src/index.ts';
import type { ReferenceQueue, ReferenceRequest, ReferenceTask } from './reference-queue.ts';
import { LeaseStep, QueueStep, type Call, type Presenter } from './steps.ts';
import { DEADLINE_WINDOW_MS, T0, type RealQueue } from './universe.ts';

function enqueueCall(model: ReferenceQueue, real: RealQueue, request: ReferenceRequest): Call {
  const { tenant, topic, version, priority, payload, deadline } = request;
  const deadlineText = deadline === undefined ? '' : ` deadline @${deadline - T0}`;
  return {
    label: `@${model.now - T0} enqueue(${tenant}/${topic} v${version} p${priority} ${payload}${deadlineText})`,
    model: () => model.enqueue(request),
    real: async () =>
      observe.enqueue(
        await real.queue.enqueue({ tenant, topic, version, priority, input: { payload }, ...(deadline === undefined ? {} : { deadline }) }),
      ),
  };
}

/** A deadline at an offset from the start of the current window (see DEADLINE_WINDOW_MS), or none. */
function deadlineFor(model: ReferenceQueue, offsetMs: number | undefined): { deadline?: number } {
  if (offsetMs === undefined) return {};
  return { deadline: model.now - ((model.now - T0) % DEADLINE_WINDOW_MS) + offsetMs };
}

export class Enqueue extends QueueStep {
  constructor(
    readonly tenant: string,
    readonly topic: string,
    readonly version: number,
    readonly priority: number,
    readonly payload: string,
    readonly deadlineOffsetMs: number | undefined,
  ) {
    super();
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const { tenant, topic, version, priority, payload } = this;
    return enqueueCall(model, real, { tenant, topic, version, priority, payload, ...deadlineFor(model, this.deadlineOffsetMs) });
  }

  toString(): string {
    const deadline = this.deadlineOffsetMs === undefined ? '' : ` deadline window+${this.deadlineOffsetMs}`;
    return `enqueue(${this.tenant}/${this.topic} v${this.version} p${this.priority} ${this.payload}${deadline})`;
  }
}

/** Q1: a client resends a request it sent before, byte for byte (a duplicate, or expired, or a conflict). */
export class Resend extends QueueStep {
  constructor(readonly pick: number) {
    super();
  }

  override check(model: Readonly<ReferenceQueue>): boolean {
    return model.sent.length > 0;
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    return enqueueCall(model, real, model.sent[model.sent.length - 1 - (this.pick % model.sent.length)]!);
  }

  toString(): string {
    return `resend(request -${this.pick})`;
  }
}

/** Q2: the next version of a known task's topic, mostly of one that is running (stale_input) or waiting (replaced). */
export class NewVersion extends QueueStep {
  constructor(
    readonly pick: number,
    readonly priority: number,
    readonly payload: string,
    readonly deadlineOffsetMs: number | undefined,
  ) {
    super();
  }

  override check(model: Readonly<ReferenceQueue>): boolean {
    return model.tasks.length > 0;
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const live = model.tasks.filter((task) => task.state === 'running' || task.state === 'ready');
    const pool = live.length > 0 && this.pick % 4 !== 3 ? live : model.tasks;
    const task = pool[this.pick % pool.length]!;
    const { tenant, topic, priority, payload } = { ...task, ...this };
    return enqueueCall(model, real, { tenant, topic, version: task.version + 1, priority, payload, ...deadlineFor(model, this.deadlineOffsetMs) });
  }

  toString(): string {
    const deadline = this.deadlineOffsetMs === undefined ? '' : ` deadline window+${this.deadlineOffsetMs}`;
    return `newVersion(task #${this.pick}, p${this.priority} ${this.payload}${deadline})`;
  }
}

export class Claim extends QueueStep {
  constructor(readonly workerId: string) {
    super();
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    return {
      label: `@${model.now - T0} ${this.toString()}`,
      model: () => model.claim(this.workerId),
      real: async () => observe.claim(await real.queue.claim(this.workerId)),
    };
  }

  toString(): string {
    return `claim(${this.workerId})`;
  }
}

export class Heartbeat extends LeaseStep {
  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    return {
      label: `@${model.now - T0} ${this.describe('heartbeat', lease)}`,
      model: () => model.heartbeat(lease),
      real: async () => observe.heartbeat(await real.queue.heartbeat(lease.taskId, lease.workerId, lease.generation)),
    };
  }

  toString(): string {
    return `heartbeat(${this.leaseText()})`;
  }
}

export class Complete extends LeaseStep {
  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    return {
      label: `@${model.now - T0} ${this.describe('complete', lease)}`,
      model: () => model.complete(lease),
      real: async () => observe.complete(await real.queue.complete(lease.taskId, lease.workerId, lease.generation, { answer: 42 })),
    };
  }

  toString(): string {
    return `complete(${this.leaseText()})`;
  }
}

export class Fail extends LeaseStep {
  constructor(
    pick: number,
    presenter: Presenter,
    readonly errorClass: ErrorClass,
    readonly jitterUnit: number,
  ) {
    super(pick, presenter);
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    return {
      label: `@${model.now - T0} ${this.describe('fail', lease)} ${this.errorClass} jitter ${this.jitterUnit}`,
      model: () => model.fail(lease, this.errorClass, this.jitterUnit),
      real: async () => {
        real.random.unit = this.jitterUnit;
        return observe.fail(await real.queue.fail(lease.taskId, lease.workerId, lease.generation, { errorClass: this.errorClass, message: 'boom' }));
      },
    };
  }

  toString(): string {
    return `fail(${this.leaseText()}, ${this.errorClass}, jitter ${this.jitterUnit})`;
  }
}

export class AcknowledgeCancel extends LeaseStep {
  protected override prefers(task: ReferenceTask): boolean {
    return task.cancelRequested;
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    return {
      label: `@${model.now - T0} ${this.describe('acknowledgeCancel', lease)}`,
      model: () => model.acknowledgeCancel(lease),
      real: async () => observe.acknowledgeCancel(await real.queue.acknowledgeCancel(lease.taskId, lease.workerId, lease.generation)),
    };
  }

  toString(): string {
    return `acknowledgeCancel(${this.leaseText()})`;
  }
}

export class AppendEvent extends LeaseStep {
  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    return {
      label: `@${model.now - T0} ${this.describe('appendEvent', lease)}`,
      model: () => model.appendEvent(lease),
      real: async () => observe.appendEvent(await real.queue.appendEvent(lease.taskId, lease.workerId, lease.generation, 'tool_called', { tool: 'lookup' })),
    };
  }

  toString(): string {
    return `appendEvent(${this.leaseText()})`;
  }
}

export class Checkpoint extends LeaseStep {
  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    const lease = this.lease(model);
    const write = { kind: 'B' as const, step: 1, state: { messages: [] }, usage: { inputTokens: 10, outputTokens: 5, modelCalls: 1 } };
    return {
      label: `@${model.now - T0} ${this.describe('checkpoint', lease)}`,
      model: () => model.checkpoint(lease),
      real: async () => observe.checkpoint(await real.queue.checkpoint(lease.taskId, lease.workerId, lease.generation, write)),
    };
  }

  toString(): string {
    return `checkpoint(${this.leaseText()})`;
  }
}

export class ExpireLeases extends QueueStep {
  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    return { label: `@${model.now - T0} expireLeases()`, model: () => model.expireLeases(), real: () => real.queue.expireLeases() };
  }

  toString(): string {
    return 'expireLeases()';
  }
}

export class ConfirmStopped extends QueueStep {
  constructor(
    readonly pick: number,
    readonly previousGeneration: boolean,
    readonly source: 'supervisor' | 'model',
  ) {
    super();
  }

  override check(model: Readonly<ReferenceQueue>): boolean {
    return model.tasks.length > 0;
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    // Mostly an uncertain task, which is what a supervisor confirms; otherwise any task, to see the refusals.
    const uncertain = model.tasks.filter((task) => task.state === 'uncertain');
    const pool = uncertain.length > 0 && this.pick % 4 !== 3 ? uncertain : model.tasks;
    const task = pool[this.pick % pool.length]!;
    const generation = this.previousGeneration ? Math.max(0, task.generation - 1) : task.generation;
    return {
      label: `@${model.now - T0} confirmStopped(task ${task.id}, gen ${generation}, ${this.source})`,
      model: () => model.confirmStopped(task.id, generation, this.source),
      real: async () => observe.confirmStopped(await real.queue.confirmStopped(task.id, generation, this.source)),
    };
  }

  toString(): string {
    return `confirmStopped(task #${this.pick}${this.previousGeneration ? ', previous generation' : ''}, ${this.source})`;
  }
}

export class Cancel extends QueueStep {
  constructor(readonly pick: number) {
    super();
  }

  override check(model: Readonly<ReferenceQueue>): boolean {
    return model.tasks.length > 0;
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    // Mostly a task that has not ended (running ones matter most: Q13's request); sometimes any task.
    const live = model.tasks.filter((task) => task.state === 'ready' || task.state === 'running' || task.state === 'uncertain');
    const pool = live.length > 0 && this.pick % 4 !== 3 ? live : model.tasks;
    const task = pool[pool.length - 1 - (this.pick % pool.length)]!;
    return {
      label: `@${model.now - T0} cancel(task ${task.id})`,
      model: () => model.cancel(task.id),
      real: async () => observe.cancel(await real.queue.cancel(task.id)),
    };
  }

  toString(): string {
    return `cancel(task -${this.pick})`;
  }
}

export class AdvanceClock extends QueueStep {
  constructor(readonly ms: number) {
    super();
  }

  protected resolve(model: ReferenceQueue, real: RealQueue): Call {
    return {
      label: `advance(${this.ms} ms) to @${model.now - T0 + this.ms}`,
      model: () => model.advance(this.ms),
      real: async () => {
        real.clock.advanceBy(this.ms);
      },
    };
  }

  toString(): string {
    return `advance(${this.ms} ms)`;
  }
}
