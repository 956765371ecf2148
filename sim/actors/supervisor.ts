import { RetryableStoreError } from '../../src/queue/errors.ts';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import { recordedCall, type ActorQueue } from './gated-queue.ts';
import type { Incarnation } from './incarnation.ts';

export interface SupervisorConstraints {
  /** How often it expires leases and looks at uncertain tasks. */
  scanMs: number;
  /** How long after a process died the platform confirms the death (like a pod's termination). */
  confirmDelayMs: number;
}

/**
 * The trusted execution layer (Q11, S3). It knows which incarnations really died, and which runs a
 * living worker reported as stopped after losing the lease (R9). It confirms the stop of an uncertain
 * task only in those cases, never for a paused worker (I12), and it also expires overdue leases, so a
 * takeover takes about one lease plus one scan.
 */
export interface SupervisorObservers {
  uncertain(taskId: number, generation: number): void;
  confirmed(taskId: number, generation: number): void;
}

export class Supervisor {
  private readonly stoppedRuns = new Set<string>();
  private active = true;

  constructor(
    private readonly loop: EventLoop,
    private readonly history: History,
    /** Its own queue on its own connection (sim/store/fleet.ts). */
    private readonly own: ActorQueue,
    private readonly incarnations: () => ReadonlyMap<string, Incarnation>,
    private readonly constraints: SupervisorConstraints,
    private readonly available: () => boolean,
    /** Told of every uncertain task a scan looks at, and of every successful confirmation: the world replays some confirmations late, as stale writes. */
    private readonly observers: SupervisorObservers = { uncertain: () => {}, confirmed: () => {} },
  ) {}

  /** `onCrash`: an error the scan does not expect (a bug of the core or the world) ends the run as a harness crash. */
  start(onCrash: (error: unknown) => void): void {
    this.scanLoop().catch(onCrash);
  }

  stop(): void {
    this.active = false;
  }

  /**
   * A living worker says it stopped this run (it lost the lease and made no terminal write). The report
   * counts only for the worker that holds the task: a worker that ran a duplicate delivery of the same
   * claim also stops on stale_lease, and its word says nothing about the holder, which may be alive.
   */
  reportStopped(taskId: number, generation: number, workerId: string): void {
    this.stoppedRuns.add(`${taskId}:${generation}:${workerId}`);
  }

  private async scanLoop(): Promise<void> {
    while (this.active) {
      await this.loop.sleep(this.constraints.scanMs);
      if (this.active && this.available()) await this.scan();
    }
  }

  async scan(): Promise<void> {
    // The call in flight: a competing writer that keeps the database busy past the store's retries
    // (faults/busy.ts, Q18: a BusyError), or a scheduler gone down, fails it, and the scan ends there.
    let open: number | undefined;
    try {
      const { queue, connection } = this.own;
      const invoke = (open = this.history.invoke('supervisor', 'expireLeases'));
      const expiry = await recordedCall(connection, invoke, () => queue.expireLeases());
      this.history.ok(invoke, { data: { expired: expiry.result, ev: expiry.ev } });
      const reconciling = (open = this.history.invoke('supervisor', 'reconcile'));
      const reconciled = await recordedCall(connection, reconciling, () => queue.reconcile());
      this.history.ok(reconciling, { data: { ...reconciled.result, ev: reconciled.ev } });
      open = undefined;
      for (const task of (await queue.tasksInState('uncertain'))) {
        this.observers.uncertain(task.id, task.generation);
        const holder = task.workerId === undefined ? undefined : this.incarnations().get(task.workerId);
        if (holder === undefined || holder.state === 'paused') continue;
        const reported = this.stoppedRuns.has(`${task.id}:${task.generation}:${holder.id}`);
        const deadLongEnough = holder.state === 'dead' && this.loop.now() - (holder.diedAtMs ?? 0) >= this.constraints.confirmDelayMs;
        if (!reported && !deadLongEnough) continue;
        const confirm = (open = this.history.invoke('supervisor', 'confirmStopped', {
          taskId: task.id,
          generation: task.generation,
          data: { holder: holder.id, holderState: holder.state, reported },
        }));
        const { result, ev } = await recordedCall(connection, confirm, () => queue.confirmStopped(task.id, task.generation, 'supervisor'));
        open = undefined;
        if (result.ok) {
          this.history.ok(confirm, { data: { outcome: result.next, ev } });
          this.observers.confirmed(task.id, task.generation);
        } else this.history.fail(confirm, result.error, { data: { ev } });
      }
    } catch (error) {
      // Its look at the uncertain tasks can meet it too: its transaction waited at BEGIN (sim/store/fleet.ts)
      // while the scheduler went down. Either way the scan ends, and the next one tries again.
      if (!(error instanceof RetryableStoreError)) throw error;
      if (open !== undefined) this.history.fail(open, error.code);
    }
  }
}
