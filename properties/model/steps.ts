/**
 * What every command of the model-based test does. A command is generated with abstract arguments (which
 * lease, counted back from the newest; which task; which stale caller to impersonate), resolves them
 * against the model when it runs, applies the call to the model and to the real queue, and compares the
 * two answers. After every command the whole visible state is compared too (observe.ts).
 */
import fc from 'fast-check';
import { expectSame, expectSameState } from './observe.ts';
import type { Lease, ReferenceQueue, ReferenceTask } from './reference-queue.ts';
import { WORKERS, type RealQueue } from './universe.ts';

export type QueueCommand = fc.AsyncCommand<ReferenceQueue, RealQueue>;

/** How a fenced write presents a lease: as its holder, or as one of the stale callers Q8 must refuse. */
export type Presenter = 'holder' | 'otherWorker' | 'olderGeneration' | 'newerGeneration';

/** One resolved call: a label for the trace, the model's answer and the real queue's (projected). */
export interface Call {
  label: string;
  model: () => unknown;
  /** The real queue's answer: every call of its API returns a promise (SPEC P2). */
  real: () => Promise<unknown>;
}

export abstract class QueueStep implements QueueCommand {
  check(_model: Readonly<ReferenceQueue>): boolean {
    return true;
  }

  async run(model: ReferenceQueue, real: RealQueue): Promise<void> {
    const call = this.resolve(model, real);
    const expected = call.model();
    real.trace.push(`${call.label} -> ${JSON.stringify(expected)}`);
    let actual: unknown;
    try {
      actual = await call.real();
    } catch (error) {
      // A throw is an answer too, and one the model never gives: report it with the calls that led to it.
      actual = { threw: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
    expectSame(actual, expected, call.label, real);
    await expectSameState(model, real);
  }

  protected abstract resolve(model: ReferenceQueue, real: RealQueue): Call;
  abstract toString(): string;
}

/** A step that needs a lease granted earlier in the run. */
export abstract class LeaseStep extends QueueStep {
  constructor(
    readonly pick: number,
    readonly presenter: Presenter,
  ) {
    super();
  }

  override check(model: Readonly<ReferenceQueue>): boolean {
    return model.leases.length > 0;
  }

  protected lease(model: ReferenceQueue): Lease {
    // Mostly a lease whose task still runs at its generation (one this command is most interesting for, if
    // any); otherwise any lease, counted back from the newest.
    const current = model.leases.filter((lease) => {
      const task = model.task(lease.taskId);
      return task?.state === 'running' && task.generation === lease.generation;
    });
    const preferred = current.filter((lease) => this.prefers(model.task(lease.taskId)!));
    const pool = this.pick % 4 === 3 ? model.leases : preferred.length > 0 ? preferred : current.length > 0 ? current : model.leases;
    const granted = pool[pool.length - 1 - (this.pick % pool.length)]!;
    switch (this.presenter) {
      case 'holder':
        return granted;
      case 'otherWorker': {
        const next = WORKERS[(WORKERS.indexOf(granted.workerId as (typeof WORKERS)[number]) + 1) % WORKERS.length]!;
        return { ...granted, workerId: next };
      }
      case 'olderGeneration':
        return { ...granted, generation: granted.generation - 1 };
      case 'newerGeneration':
        return { ...granted, generation: granted.generation + 1 };
    }
  }

  /** Which running tasks this command would rather write to. */
  protected prefers(_task: ReferenceTask): boolean {
    return true;
  }

  protected describe(name: string, lease: Lease): string {
    return `${name}(task ${lease.taskId}, ${lease.workerId}, gen ${lease.generation})`;
  }

  protected leaseText(): string {
    return `lease #${this.pick} as ${this.presenter}`;
  }
}
