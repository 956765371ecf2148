import { RetryableStoreError } from '../../src/queue/errors.ts';
import type { WorkQueue } from '../../src/queue/types.ts';
import type { EventLoop } from '../event-loop.ts';
import type { History } from '../history.ts';
import { started, type CursorReader } from './cursor.ts';
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
    private readonly queue: () => WorkQueue,
    private readonly incarnations: () => ReadonlyMap<string, Incarnation>,
    private readonly constraints: SupervisorConstraints,
    private readonly available: () => boolean,
    /** Told of every uncertain task a scan looks at, and of every successful confirmation: the world replays some confirmations late, as stale writes. */
    private readonly observers: SupervisorObservers = { uncertain: () => {}, confirmed: () => {} },
    /** The event cursor, read synchronously right after each call (cursor.ts). */
    private readonly cursor: CursorReader = () => 0,
  ) {}

  start(): void {
    void this.scanLoop();
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
    // (faults/busy.ts, Q18: a BusyError) fails it, and the scan ends there; the next scan tries again.
    let open: number | undefined;
    try {
      const queue = this.queue();
      const invoke = (open = this.history.invoke('supervisor', 'expireLeases'));
      const expiry = await started(queue.expireLeases(), this.cursor);
      this.history.ok(invoke, { data: { expired: expiry.result, ev: expiry.ev } });
      const reconciling = (open = this.history.invoke('supervisor', 'reconcile'));
      const reconciled = await started(queue.reconcile(), this.cursor);
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
        const { result, ev } = await started(queue.confirmStopped(task.id, task.generation, 'supervisor'), this.cursor);
        open = undefined;
        if (result.ok) {
          this.history.ok(confirm, { data: { outcome: result.next, ev } });
          this.observers.confirmed(task.id, task.generation);
        } else this.history.fail(confirm, result.error, { data: { ev } });
      }
    } catch (error) {
      if (!(error instanceof RetryableStoreError) || open === undefined) throw error;
      this.history.fail(open, error.code);
    }
  }
}
