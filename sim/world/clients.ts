import { RetryableStoreError } from '../../src/queue/errors.ts';
import type { EnqueueRequest, EnqueueResult, WorkQueue } from '../../src/queue/types.ts';
import { recordedCall, type ActorQueue } from '../actors/gated-queue.ts';
import type { JsonValue } from '../canonical-json.ts';
import type { EventLoop } from '../event-loop.ts';
import type { History, OperationFields } from '../history.ts';
import type { SeededRandom } from '../random.ts';
import type { ScenarioSpec } from '../scenario.ts';
import type { Arrival } from '../workload.ts';
import { operatorTimes } from '../workloads/client-swarm.ts';
import { clientSwarmOf } from '../workloads/index.ts';

/** What the clients need of the world around them. */
export interface ClientsWorld {
  loop: EventLoop;
  history: History;
  scenario: ScenarioSpec;
  /** The world's root stream: the operator draws from `workload/client-swarm/operator`. */
  random: SeededRandom;
  /** True while the scheduler is down (the database host says). */
  down(): boolean;
  /** A queue of its own for an actor that never dies, on a connection of its own (`interleaves` false: its transactions never wait). */
  connect(id: string, interleaves?: boolean): ActorQueue;
  /** An enqueue was accepted (T2: the world remembers the tasks the workload drew poison). */
  accepted(request: EnqueueRequest, taskId: number): void;
}

/** An actor's call that failed while the scheduler was down, or the database stayed busy, and how it is tried again. */
interface Again {
  afterMs: number;
  retry: () => unknown;
}

/**
 * The actors outside the fleet of workers that call the scheduler (S3): the client (enqueues, cancels,
 * a tenant's read of its tasks), the operator (the client swarm's cancels of uncertain tasks, a tenant's
 * pause and resume) and the monitor (signals). Each has its own queue on its own connection; every call
 * that needs the scheduler goes through one helper, `callWhileUp`.
 */
export class Clients {
  readonly enqueued: { arrival: Arrival; result: EnqueueResult }[] = [];
  private readonly client: ActorQueue;
  private readonly operator: ActorQueue;
  private readonly enqueuesByTenant = new Map<string, number>();
  /** A2: tenants the operator paused (faults/tenant-pause.ts) and has not resumed: resumed as the liveness phase begins. */
  private readonly pausedTenants = new Set<string>();

  constructor(private readonly world: ClientsWorld) {
    this.client = world.connect('client');
    this.operator = world.connect('operator');
  }

  /**
   * One call of an actor that needs the scheduler, recorded as history `invoke` (or, with `invoke`
   * undefined, a look the history does not keep: the operator's read of the uncertain tasks). While the
   * scheduler is down the call cannot reach it: recorded failed `unavailable` (with `unavailableFields`).
   * A call that met a database busy past the store's retries (a RetryableStoreError, Q18: a competing
   * writer held the lock, faults/busy.ts), or whose transaction waited at its BEGIN and met a scheduler
   * gone down meanwhile (sim/store/fleet.ts), is recorded failed with its code. Either way, with `again`,
   * it is tried again that much later. Anything else is not for the actor to handle. Otherwise
   * `answered` gets the result and the event cursor its transaction committed at, in the same tick the
   * call answered.
   */
  private async callWhileUp<T>(
    invoke: number | undefined,
    { queue, connection }: ActorQueue,
    call: (queue: WorkQueue) => Promise<T>,
    answered: (answer: { result: T; ev: number }) => void | Promise<void>,
    again?: Again,
    unavailableFields?: OperationFields,
  ): Promise<void> {
    const { history, loop } = this.world;
    if (this.world.down()) {
      if (invoke !== undefined) history.fail(invoke, 'unavailable', unavailableFields);
      if (again !== undefined) loop.after(again.afterMs, again.retry);
      return;
    }
    let answer: { result: T; ev: number };
    try {
      answer = invoke === undefined ? { result: await call(queue), ev: connection.cursorNow() } : await recordedCall(connection, invoke, () => call(queue));
    } catch (error) {
      if (!(error instanceof RetryableStoreError)) throw error;
      if (invoke !== undefined) history.fail(invoke, error.code);
      if (again !== undefined) loop.after(again.afterMs, again.retry);
      return;
    }
    await answered(answer);
  }

  /** The workload's arrivals, each enqueued by the client at its instant. */
  scheduleArrivals(arrivals: readonly Arrival[], startMs: number): void {
    for (const arrival of arrivals) {
      this.world.loop.schedule(startMs + arrival.atMs, () => this.enqueue(arrival, startMs));
    }
  }

  /** The client enqueues; an enqueue the scheduler could not take is tried again, so nothing is lost (I11). */
  private async enqueue(arrival: Arrival, startMs: number, attempt = 0): Promise<void> {
    const { history, loop } = this.world;
    const request = arrival.deadlineMs === undefined ? arrival.request : { ...arrival.request, deadline: startMs + arrival.deadlineMs };
    const invoke = history.invoke('client', 'enqueue', { data: { tenant: request.tenant, topic: request.topic, version: request.version } });
    await this.callWhileUp(
      invoke,
      this.client,
      (queue) => queue.enqueue(request),
      async ({ result, ev }) => {
        this.enqueued.push({ arrival, result });
        if (result.ok) this.world.accepted(request, result.taskId);
        if (result.ok) history.ok(invoke, { taskId: result.taskId, data: { outcome: result.status, ev } });
        else history.fail(invoke, result.error, { data: { ev } });
        if (result.ok) await this.readAsTenant(request.tenant);
        if (result.ok && arrival.cancelAtMs !== undefined) {
          const taskId = result.taskId;
          loop.schedule(Math.max(loop.now(), startMs + arrival.cancelAtMs), () => this.cancel(taskId));
        }
      },
      { afterMs: 500 * (attempt + 1), retry: () => this.enqueue(arrival, startMs, attempt + 1) },
    );
  }

  /**
   * The client swarm's operator (workloads/client-swarm.ts): at each of its times it reads the
   * uncertain tasks and, with its probability, cancels one of them (Q13), from its own stream.
   */
  scheduleOperator(startMs: number): void {
    const swarm = clientSwarmOf(this.world.scenario.workload);
    if (swarm === undefined) return;
    const random = this.world.random.fork('workload').fork('client-swarm').fork('operator');
    for (const atMs of operatorTimes(swarm)) {
      // Its look is not recorded; while the scheduler is down, or when the look meets a busy database, there is no cancel this time.
      this.world.loop.schedule(startMs + atMs, () =>
        this.callWhileUp(
          undefined,
          this.operator,
          (queue) => queue.tasksInState('uncertain'),
          async ({ result: uncertain }) => {
            if (uncertain.length > 0 && random.chance(swarm.operatorCancelProbability)) await this.cancel(random.pick(uncertain).id, 'operator');
          },
        ),
      );
    }
  }

  /**
   * A5, I22: the monitor (the scenario's `monitor` section) reads queue.signals() every everyMs of the
   * safety phase on its own connection, recorded as its `signals` call with the answer and the event
   * cursor the read ran at, so I22 can recompute every signal from the log at that instant. While the
   * scheduler is down, or the database is busy, a read is skipped (recorded failed).
   */
  scheduleMonitor(startMs: number): void {
    const { scenario, loop, history } = this.world;
    const monitor = scenario.monitor;
    if (monitor === undefined) return;
    const own = this.world.connect('monitor', false);
    for (let atMs = monitor.offsetMs; atMs < scenario.phases.safetyMs; atMs += monitor.everyMs) {
      loop.schedule(startMs + atMs, async () => {
        const invoke = history.invoke('monitor', 'signals');
        await this.callWhileUp(
          invoke,
          own,
          (queue) => queue.signals(),
          ({ result, ev }) => history.ok(invoke, { data: { signals: result as unknown as JsonValue, ev } }),
        );
      });
    }
  }

  /** The client (or the operator) cancels a task (Q13); while the scheduler is down, or the database stays busy, it tries again. */
  async cancel(taskId: number, actor = 'client'): Promise<void> {
    const { history } = this.world;
    const invoke = history.invoke(actor, 'cancel', { taskId });
    await this.callWhileUp(
      invoke,
      actor === 'operator' ? this.operator : this.client,
      (queue) => queue.cancel(taskId),
      ({ result, ev }) => {
        if (result.ok) history.ok(invoke, { data: { outcome: result.state, ev } });
        else history.fail(invoke, result.error, { data: { ev } });
      },
      { afterMs: 1_000, retry: () => this.cancel(taskId, actor) },
    );
  }

  /**
   * A2: the operator pauses or resumes a tenant (faults/tenant-pause.ts), recorded as its `pauseTenant`
   * (args [tenant, reason]) or `resumeTenant` (args [tenant]) call; while the scheduler is down, or the
   * database stays busy, it tries again.
   */
  async tenantAction(op: 'pauseTenant' | 'resumeTenant', args: [string, string] | [string], retry = false): Promise<void> {
    const { history } = this.world;
    const [tenant] = args;
    // A pause still being retried when its tenant was resumed since (by a later resume, or as the liveness phase began) is dropped.
    if (retry && op === 'pauseTenant' && !this.pausedTenants.has(tenant)) return;
    if (op === 'pauseTenant') this.pausedTenants.add(tenant);
    else this.pausedTenants.delete(tenant);
    const invoke = history.invoke('operator', op, { data: { tenant, args } });
    await this.callWhileUp(
      invoke,
      this.operator,
      (queue): Promise<{ ok: boolean; changed?: boolean }> => (op === 'pauseTenant' ? queue.pauseTenant(tenant, args[1]!) : queue.resumeTenant(tenant)),
      ({ result, ev }) => {
        if (result.ok) history.ok(invoke, { data: { tenant, args, ev, changed: result.changed === true } });
        else history.fail(invoke, 'refused', { data: { tenant, args, ev } });
      },
      { afterMs: 1_000, retry: () => this.tenantAction(op, args, true) },
      { data: { tenant, args } },
    );
  }

  /** A2: the tenants the operator left paused, in order: resumed as the liveness phase begins. */
  stillPaused(): string[] {
    return [...this.pausedTenants].sort();
  }

  /**
   * The tenant's own client reads its task list (Q19) after its 1st, 2nd, 4th, 8th, ... accepted
   * enqueue: I13 checks that a tenant read sees only that tenant's rows. The history keeps which
   * tenants the rows named, not the rows.
   */
  private async readAsTenant(tenant: string): Promise<void> {
    const { history } = this.world;
    const count = (this.enqueuesByTenant.get(tenant) ?? 0) + 1;
    this.enqueuesByTenant.set(tenant, count);
    if ((count & (count - 1)) !== 0) return;
    const invoke = history.invoke('client', 'list-tenant', { data: { tenant } });
    // Not tried again: the next read is another enqueue away.
    await this.callWhileUp(
      invoke,
      this.client,
      (queue) => queue.listForTenant(tenant),
      ({ result: rows }) => {
        const tenants = [...new Set(rows.map((row) => row.tenant))].sort();
        history.ok(invoke, { data: { tenant, rows: rows.length, tenants } });
      },
    );
  }
}
