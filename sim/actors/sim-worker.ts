import type { ClaimedTask } from '../../src/queue/types.ts';
import { ToolFailure, type RunOutcome, type Tool, type ToolContext } from '../../src/worker/types.ts';
import { Worker } from '../../src/worker/worker.ts';
import type { EventLoop } from '../event-loop.ts';
import { reasonOf, type History } from '../history.ts';
import { gatedQueue, type ActorQueue, type QueueFaultHooks } from './gated-queue.ts';
import { Incarnation } from './incarnation.ts';
import type { Model } from '../../src/worker/types.ts';
import type { Random } from '../../src/ports.ts';
import type { KillPoint } from '../faults/plan.ts';
import type { PointHit } from '../faults/injector.ts';

export interface SimWorkerEnvironment {
  loop: EventLoop;
  history: History;
  /** A queue of its own for an incarnation, on a connection of its own (sim/store/fleet.ts). */
  connect(incarnation: Incarnation): ActorQueue;
  slots: number;
  idleWaitMs: number;
  maxSteps: number;
  toolTimeoutMs: number;
  /** Builds the model and tools one incarnation sees; `kill` lets tool hooks kill this incarnation. */
  makeModel(incarnation: Incarnation): Model;
  makeTools(incarnation: Incarnation): Tool[];
  queueHooks(incarnation: Incarnation): QueueFaultHooks;
  /**
   * S4 points reached before a model or tool call of a run of `tenant`: true means the incarnation dies
   * here, before the call; `{ fails }` that the call fails at once with that error.
   */
  beforeCall(point: KillPoint, incarnation: Incarnation, tenant: string): PointHit;
  onOutcome(incarnation: Incarnation, outcome: RunOutcome): void;
  /** W2: the seeded stream an incarnation's retry jitter draws from. */
  randomFor(incarnation: Incarnation): Random;
  onCrash(error: unknown): void;
}

/**
 * One simulated worker slot and its incarnations. It runs the production Worker from src/ unchanged;
 * only the ports it is given are simulated: a gated waiter, model, tools and queue (see Incarnation).
 */
export class SimWorker {
  readonly incarnations: Incarnation[] = [];
  private worker: Worker | undefined;
  /** R8: incarnations told to drain (faults/drain.ts), with the runs that ended on their own since. */
  private readonly draining = new Map<Incarnation, { finished: number }>();
  /** R8: a drain told to a paused incarnation, which it starts when it resumes (the SIGTERM is pending). */
  private pendingDrain: { incarnation: Incarnation; start: () => void } | undefined;

  constructor(
    readonly index: number,
    private readonly environment: SimWorkerEnvironment,
  ) {}

  get current(): Incarnation | undefined {
    return this.incarnations[this.incarnations.length - 1];
  }

  start(): void {
    const { environment } = this;
    const incarnation = new Incarnation(`w${this.index}#${this.incarnations.length + 1}`, this.index);
    this.incarnations.push(incarnation);
    const model = environment.makeModel(incarnation);
    const gatedModel = {
      decide: (request: Parameters<Model['decide']>[0]) => {
        const hit = environment.beforeCall('before_model_call', incarnation, request.tenant);
        if (hit === true) return new Promise<never>(() => {});
        return incarnation.whileAlive(() => (hit === false ? model.decide(request) : Promise.reject(hit.fails)));
      },
    };
    const tools = environment.makeTools(incarnation).map((tool) => ({
      name: tool.name,
      readOnly: tool.readOnly,
      call: (args: unknown, context: ToolContext) => {
        const hit = environment.beforeCall('before_tool_call', incarnation, context.tenant);
        if (hit === true) return new Promise<never>(() => {});
        const called = hit === false ? tool : { ...tool, call: () => Promise.reject(hit.fails) };
        return incarnation.whileAlive(() => graphCall(environment.history, incarnation, called, args, context));
      },
    }));
    this.worker = new Worker({
      queue: gatedQueue(environment.connect(incarnation), incarnation, environment.history, environment.queueHooks(incarnation)),
      workerId: incarnation.id,
      model: gatedModel,
      tools,
      waiter: incarnation.waiter(environment.loop.waiter),
      clock: environment.loop.clock,
      random: environment.randomFor(incarnation),
      slots: environment.slots,
      idleWaitMs: environment.idleWaitMs,
      maxSteps: environment.maxSteps,
      toolTimeoutMs: environment.toolTimeoutMs,
      onOutcome: (outcome) => {
        const drain = this.draining.get(incarnation);
        if (drain !== undefined && FINISHED.has(outcome.kind)) drain.finished++;
        environment.onOutcome(incarnation, outcome);
      },
    });
    environment.history.note('start', incarnation.id);
    this.worker.runLoop().catch((error: unknown) => environment.onCrash(error));
  }

  /** S4 duplicate delivery: hand this worker a claim it (or another worker) already received. */
  deliver(task: ClaimedTask): void {
    const incarnation = this.current;
    if (this.worker === undefined || incarnation === undefined || incarnation.state !== 'alive') return;
    this.environment.history.note('duplicate-delivery', incarnation.id, { taskId: task.id, generation: task.generation });
    this.worker.deliver(task).catch((error: unknown) => this.environment.onCrash(error));
  }

  /** `fault` names the planned fault that did it, for reports; it is left out of the note when absent. */
  kill(reason: string, fault?: string): Incarnation | undefined {
    const incarnation = this.current;
    if (incarnation === undefined || incarnation.state === 'dead') return undefined;
    incarnation.kill(this.environment.loop.now());
    const running = this.worker?.running ?? 0;
    this.environment.history.note('kill', incarnation.id, fault === undefined ? { running, reason } : { running, reason, fault });
    return incarnation;
  }

  /** The runs in flight, for choosing "the worker holding the most running tasks". */
  get running(): number {
    return this.current?.state === 'alive' ? (this.worker?.running ?? 0) : 0;
  }

  /** `at`: the await point a point fault froze it at (checkers/windows.ts), put in the note when given. */
  pause(fault?: string, at?: string): void {
    const incarnation = this.current;
    if (incarnation?.state !== 'alive') return;
    incarnation.pause();
    const data = { ...(fault === undefined ? {} : { running: this.worker?.running ?? 0, fault }), ...(at === undefined ? {} : { at }) };
    this.environment.history.note('pause', incarnation.id, Object.keys(data).length === 0 ? undefined : data);
  }

  resume(): void {
    const incarnation = this.current;
    if (incarnation?.state !== 'paused') return;
    this.environment.history.note('resume', incarnation.id);
    incarnation.resume();
    const pending = this.pendingDrain;
    if (pending?.incarnation === incarnation) {
      this.pendingDrain = undefined;
      pending.start();
    }
  }

  /**
   * R8: SIGTERM (faults/drain.ts). The current incarnation runs the production `Worker.drain(drainMs)`
   * through its gated waiter and queue, then exits: an `exit` note, and the incarnation is dead (its
   * runs still in flight go with it, as with a process that returned from its drain and closed its
   * queue); `exited` is called then. A paused incarnation drains when it resumes; a dead one (or none)
   * is not drained (`drain-missed`); one already draining ignores it. The `drain` note holds the runs
   * in flight when the drain began; the `exit` note how many the drain handed back interrupted, how many
   * ended on their own meanwhile (finished) and how many were still in flight when it exited (left).
   */
  drain(drainMs: number, exited: () => void, fault?: string): void {
    const { history, loop } = this.environment;
    const incarnation = this.current;
    const worker = this.worker;
    if (incarnation === undefined || worker === undefined || incarnation.state === 'dead') {
      history.note('drain-missed', incarnation?.id ?? `w${this.index}`, fault === undefined ? { drainMs } : { drainMs, fault });
      return;
    }
    if (this.draining.has(incarnation) || this.pendingDrain?.incarnation === incarnation) return;
    const start = () => {
      const drain = { finished: 0 };
      this.draining.set(incarnation, drain);
      history.note('drain', incarnation.id, fault === undefined ? { running: worker.running, drainMs } : { running: worker.running, drainMs, fault });
      worker.drain(drainMs).then(
        (interrupted) =>
          // The process exits at the loop's next event, as a kill decided inside a burst does (world.ts
          // kill, atNextAwait): continuations already delivered to it (a claim answered while it was
          // frozen, say) finish their synchronous part first, and never find their process gone mid-burst.
          loop.after(0, () => {
            // Killed while draining (or since): its awaits never resolve, or it is gone already.
            if (incarnation.state === 'dead') return;
            history.note('exit', incarnation.id, { reason: 'drained', interrupted, finished: drain.finished, left: worker.running });
            incarnation.kill(loop.now());
            exited();
          }),
        (error: unknown) => this.environment.onCrash(error),
      );
    };
    if (incarnation.state === 'paused') this.pendingDrain = { incarnation, start };
    else start();
  }

  /** Stops claiming (end of the run); runs in flight are left to finish or be abandoned. */
  stop(): void {
    this.worker?.stop();
  }
}

/** Outcomes of a run that ended on its own (a terminal write or a retry), not stopped (lost lease, abandoned, crashed). */
const FINISHED: ReadonlySet<RunOutcome['kind']> = new Set(['completed', 'failed', 'retry', 'cancelled', 'expired', 'budget_exhausted']);

/**
 * A7, I21: a call of a step's tool-call graph is recorded as an operation, `tool`, from the moment the
 * tool is called to the moment it answers (ok) or fails (its error class): the intervals the checker
 * reads for "no call before its dependencies succeeded" and "no two writes of one lane at once". A call
 * that never answers (a hung tool, a lost response, a process killed mid-call) stays open. Calls of a
 * plain step are not recorded, so the histories of scenarios without graphs are what they were.
 */
function graphCall(history: History, incarnation: Incarnation, tool: Tool, args: unknown, context: ToolContext): Promise<unknown> {
  if (context.graph === undefined) return tool.call(args, context);
  const lane = context.graph.lane;
  const data = lane === undefined ? { call: context.toolCallId, tool: tool.name } : { call: context.toolCallId, tool: tool.name, lane };
  const invoke = history.invoke(incarnation.id, 'tool', { taskId: context.taskId, generation: context.generation, data });
  return tool.call(args, context).then(
    (result) => {
      history.ok(invoke);
      return result;
    },
    (error: unknown) => {
      history.fail(invoke, error instanceof ToolFailure ? error.errorClass : reasonOf(error));
      throw error;
    },
  );
}
