/**
 * A reference model of the work queue (SPEC Q1-Q16), written to be obviously right rather than fast:
 * one array of tasks, whole-array scans, no SQL, no indexes, no pruning. The model-based test runs every
 * call against it and against the real queue and compares the answers.
 *
 * It models the SPEC. Where the SPEC leaves a detail open, a comment marked `AMBIGUOUS:` says which
 * reading the model takes (usually the implementation's, stated openly). Nothing here is imported from the
 * SQL implementation: scoring and backoff are written out again on purpose, so the test checks them too.
 */
import type { TaskState } from '../../src/index.ts';
import type {
  AcknowledgeAnswer,
  CancelAnswer,
  CheckpointAnswer,
  ClaimAnswer,
  CompleteAnswer,
  ConfirmAnswer,
  EnqueueAnswer,
  FailAnswer,
  HeartbeatAnswer,
  Lease,
  ReferenceConfig,
  ReferenceRequest,
  ReferenceTask,
  SeqAnswer,
} from './reference-types.ts';

export type { ReferenceConfig, ReferenceRequest, ReferenceTask, Lease } from './reference-types.ts';

const RETRYABLE = new Set(['rate_limited', 'transient_network', 'db_busy', 'tool_timeout']);
const TERMINAL = new Set<TaskState>(['done', 'failed', 'superseded', 'cancelled', 'expired']);
/** Q3: counted against capacity. */
const LIVE = new Set<TaskState>(['ready', 'running', 'uncertain']);
/** Q6: holding a concurrency slot; uncertain keeps its slot. */
const OCCUPYING = new Set<TaskState>(['running', 'uncertain']);

export class ReferenceQueue {
  readonly tasks: ReferenceTask[] = [];
  readonly leases: Lease[] = [];
  /** Every request sent, so the test can resend one verbatim (Q1). */
  readonly sent: ReferenceRequest[] = [];
  /** Q3, I4: every refused enqueue is recorded with its reason. */
  readonly rejections: { tenant: string; topic: string; version: number; reason: string; at: number }[] = [];
  now: number;
  readonly config: ReferenceConfig;

  constructor(config: ReferenceConfig, now: number) {
    this.config = config;
    this.now = now;
  }

  task(id: number): ReferenceTask | undefined {
    return this.tasks.find((task) => task.id === id);
  }

  advance(ms: number): void {
    this.now += ms;
  }

  /** Q1-Q3, Q14 at enqueue. */
  enqueue(request: ReferenceRequest): EnqueueAnswer {
    this.sent.push(request);
    const answer = this.enqueueAnswer(request);
    if (!answer.ok) this.rejections.push({ tenant: request.tenant, topic: request.topic, version: request.version, reason: answer.error, at: this.now });
    return answer;
  }

  private enqueueAnswer(request: ReferenceRequest): EnqueueAnswer {
    const inputKey = JSON.stringify([request.priority, request.payload, request.deadline ?? null]);
    const existing = this.tasks.find((t) => t.tenant === request.tenant && t.topic === request.topic && t.version === request.version);
    // AMBIGUOUS: Q1 (same key: duplicate or conflict) and Q14 (deadline passed: `expired`) do not say which
    // comes first. The model answers Q1 first, the project's reading ("a resend of a stored task is a
    // duplicate even once its deadline passed"): the key is the identity, the deadline only guards new tasks.
    if (existing !== undefined) {
      // Q1: same key and hash: the original id; same key, other hash: a conflict and nothing changes.
      if (existing.inputKey === inputKey) return { ok: true, taskId: existing.id, status: 'duplicate' };
      return { ok: false, error: 'idempotency_conflict', taskId: existing.id };
    }
    if (request.deadline !== undefined && request.deadline <= this.now) return { ok: false, error: 'expired' };
    const sameTopic = this.tasks.filter((t) => t.tenant === request.tenant && t.topic === request.topic);
    const newest = Math.max(0, ...sameTopic.map((t) => t.version));
    if (newest > request.version) {
      // Q2: a version older than one already known arrives late; it is kept (I9) but never runs.
      // AMBIGUOUS: the SPEC lists no status for it; the model answers 'superseded' like the implementation,
      // and such a task is not live, so capacity does not apply to it.
      const task = this.insert(request, inputKey, 'superseded');
      return { ok: true, taskId: task.id, status: 'superseded' };
    }
    // Q2: older versions that have not started are superseded. One that started (running, uncertain, or
    // ready again for a retry after it ran) is left alone and will finish with outcome stale_input.
    const replaced = sameTopic.filter((t) => t.version < request.version && t.state === 'ready' && t.generation === 0);
    // Q3: a new task over capacity is refused, unless it replaces a waiting version of its topic.
    // AMBIGUOUS: a newer version whose older one has started (running, uncertain, or waiting for a retry:
    // nothing is replaced) counts as new and may be refused.
    if (replaced.length === 0 && this.liveCount() + 1 > this.config.capacity) return { ok: false, error: 'queue_full' };
    for (const old of replaced) this.end(old, 'superseded');
    const task = this.insert(request, inputKey, 'ready');
    return { ok: true, taskId: task.id, status: replaced.length > 0 ? 'replaced' : 'enqueued' };
  }

  /** Q5-Q7, Q10, Q14, Q16 at claim. */
  claim(workerId: string): ClaimAnswer {
    const at = this.now;
    this.expireLeases();
    const occupied = this.tasks.filter((t) => OCCUPYING.has(t.state));
    const blocked = new Set<string>();
    for (const t of occupied) {
      if (occupied.filter((o) => o.tenant === t.tenant).length >= this.config.perTenantLimit) blocked.add(t.tenant);
    }
    const globalFull = occupied.length >= this.config.globalLimit;
    for (;;) {
      const eligible = globalFull ? [] : this.tasks.filter((t) => t.state === 'ready' && !blocked.has(t.tenant) && t.notBefore <= at);
      const best = eligible.sort((a, b) => this.order(a, b))[0];
      if (best === undefined) {
        // AMBIGUOUS: the SPEC names 'empty' and 'quota' without defining them. The model says 'quota' when
        // some ready task (in backoff or not) belongs to a tenant a quota blocks, the implementation's reading.
        const waiting = this.tasks.some((t) => t.state === 'ready' && (globalFull || blocked.has(t.tenant)));
        return { ok: false, reason: waiting ? 'quota' : 'empty' };
      }
      // Q14: a task whose deadline passed becomes expired instead of running; the claim looks further.
      if (best.deadline !== undefined && best.deadline <= at) {
        this.end(best, 'expired');
        continue;
      }
      // Q16: retries are bounded by maxRetryAgeMs.
      // AMBIGUOUS: the SPEC does not say where retry age starts; the model measures from the first claim.
      if (best.firstClaimedAt !== undefined && at - best.firstClaimedAt > this.config.maxRetryAgeMs) {
        this.end(best, 'failed');
        continue;
      }
      return this.markRunning(best, workerId, at);
    }
  }

  /** Q8, Q9. */
  heartbeat(lease: Lease): HeartbeatAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    task.leaseUntil = this.now + this.config.leaseMs;
    return { ok: true, leaseUntil: task.leaseUntil, cancelRequested: task.cancelRequested };
  }

  /** Q2, Q8, Q12, Q13 (completion that commits first wins over a pending cancel), Q14 before commit. */
  complete(lease: Lease): CompleteAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    if (task.deadline !== undefined && task.deadline <= this.now) {
      this.end(task, 'expired');
      return { ok: false, error: 'expired' };
    }
    // Q2: the result is kept, marked stale_input when a newer version of the topic exists.
    // AMBIGUOUS: "because a newer version is queued" is read as "a newer version was accepted", whatever
    // became of it since (it may have run, been cancelled or expired). A pending cancel does not stop the
    // completion: the cancel of a running task is only a request (Q13), and this commit ends the run first.
    const newer = this.tasks.some((t) => t.tenant === task.tenant && t.topic === task.topic && t.version > task.version);
    this.end(task, 'done', newer ? 'stale_input' : 'done');
    return { ok: true, outcome: newer ? 'stale_input' : 'done' };
  }

  /** Q8, Q16. `jitterUnit` is what the injected Random returns for this call. */
  fail(lease: Lease, errorClass: string, jitterUnit: number): FailAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    const at = this.now;
    // AMBIGUOUS: a failure while a cancel is pending ends the run cancelled (the cancel wins over the retry
    // and over the failure), the implementation's reading of Q13.
    if (task.cancelRequested) {
      this.end(task, 'cancelled', 'cancelled');
      return { ok: true, next: 'cancelled' };
    }
    if (!RETRYABLE.has(errorClass) || task.attempts >= this.config.maxAttempts) {
      this.end(task, 'failed');
      return { ok: true, next: 'failed' };
    }
    const backoffMs = this.backoffMs(task.attempts, jitterUnit);
    const retryAt = at + backoffMs;
    // AMBIGUOUS: a retry that could only start after the retry age or the deadline is not scheduled; the
    // task fails now. The SPEC bounds retries by age but does not say the bound is applied this early.
    const tooOld = retryAt - (task.firstClaimedAt ?? at) > this.config.maxRetryAgeMs;
    const pastDeadline = task.deadline !== undefined && task.deadline <= retryAt;
    if (tooOld || pastDeadline) {
      this.end(task, 'failed');
      return { ok: true, next: 'failed' };
    }
    task.state = 'ready';
    task.leaseUntil = undefined;
    task.notBefore = retryAt;
    task.events++;
    return { ok: true, next: 'retry', notBefore: retryAt };
  }

  /**
   * Q13: the holder saw the cancel request at a step boundary and ends the run cancelled.
   * AMBIGUOUS: without a persisted request there is nothing to acknowledge; the call is refused and
   * nothing changes (the implementation's `not_requested`).
   */
  acknowledgeCancel(lease: Lease): AcknowledgeAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    if (!task.cancelRequested) return { ok: false, error: 'not_requested' };
    this.end(task, 'cancelled', 'cancelled');
    return { ok: true };
  }

  /** Q8, Q15: a fenced event append. */
  appendEvent(lease: Lease): SeqAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    task.events++;
    return { ok: true, seq: task.events };
  }

  /** R1 through Q8: a fenced checkpoint and its event. */
  checkpoint(lease: Lease): CheckpointAnswer {
    const task = this.fenced(lease);
    if (task === undefined) return { ok: false, error: 'stale_lease' };
    task.events++;
    task.checkpoints++;
    return { ok: true, seq: task.checkpoints, eventSeq: task.events };
  }

  /** Q10: every running task whose lease has passed becomes uncertain and keeps its slot. */
  expireLeases(): number {
    let moved = 0;
    for (const task of this.tasks) {
      if (task.state !== 'running' || task.leaseUntil === undefined || task.leaseUntil > this.now) continue;
      task.state = 'uncertain';
      task.events++;
      moved++;
    }
    return moved;
  }

  /**
   * Q11: back to ready, or failed once attempts reached maxAttempts.
   * AMBIGUOUS: Q11 names only ready and failed. A pending cancel (Q13) ends the task cancelled and a passed
   * deadline (Q14) expired here, rather than sending it to ready for the next claim to expire it.
   */
  confirmStopped(taskId: number, generation: number, source: string): ConfirmAnswer {
    if (/^(model|tool)\b/i.test(source)) return { ok: false, error: 'invalid_input' };
    const task = this.task(taskId);
    if (task === undefined) return { ok: false, error: 'not_found' };
    if (task.state !== 'uncertain') return { ok: false, error: 'not_uncertain' };
    if (task.generation !== generation) return { ok: false, error: 'stale_generation' };
    if (task.cancelRequested) {
      this.end(task, 'cancelled', 'cancelled');
      return { ok: true, next: 'cancelled' };
    }
    if (task.deadline !== undefined && task.deadline <= this.now) {
      this.end(task, 'expired');
      return { ok: true, next: 'expired' };
    }
    if (task.attempts >= this.config.maxAttempts) {
      this.end(task, 'failed');
      return { ok: true, next: 'failed' };
    }
    task.state = 'ready';
    task.leaseUntil = undefined;
    task.events++;
    return { ok: true, next: 'ready' };
  }

  /** Q13. */
  cancel(taskId: number): CancelAnswer {
    const task = this.task(taskId);
    if (task === undefined) return { ok: false, error: 'not_found' };
    if (TERMINAL.has(task.state)) return { ok: false, error: 'already_terminal', state: task.state };
    if (task.state === 'ready') {
      this.end(task, 'cancelled', 'cancelled');
      return { ok: true, state: 'cancelled' };
    }
    // A request is persisted once; asking again changes nothing and appends nothing.
    if (!task.cancelRequested) task.events++;
    task.cancelRequested = true;
    return { ok: true, state: 'cancel_requested' };
  }

  liveCount(): number {
    return this.tasks.filter((t) => LIVE.has(t.state)).length;
  }

  /** Q4: score = base + min(agingCap, floor(waitMs / agingPeriodMs)), no negative aging. */
  score(task: ReferenceTask): number {
    const waitMs = Math.max(0, this.now - task.enqueuedAt);
    return task.priority + Math.min(this.config.agingCap, Math.floor(waitMs / this.config.agingPeriodMs));
  }

  /**
   * Q16: min(baseDelayMs * 2^attempts, maxDelayMs) times a jitter in [0.8, 1.2], with attempts as counted at
   * claim (so the first retry waits 2 x baseDelayMs). AMBIGUOUS: times are integer ms, so the product is
   * rounded to the nearest ms; the jitter is 0.8 + 0.4 x the Random's unit draw.
   */
  backoffMs(attempts: number, jitterUnit: number): number {
    const exponential = Math.min(this.config.baseDelayMs * 2 ** attempts, this.config.maxDelayMs);
    return Math.round(exponential * (0.8 + 0.4 * jitterUnit));
  }

  /** Q4: higher score first, then the earlier enqueue, then the smaller id. */
  private order(a: ReferenceTask, b: ReferenceTask): number {
    return this.score(b) - this.score(a) || a.enqueuedAt - b.enqueuedAt || a.id - b.id;
  }

  /** Q8: running, held by this worker, at this generation, lease not yet passed. */
  private fenced(lease: Lease): ReferenceTask | undefined {
    const task = this.task(lease.taskId);
    if (task === undefined || task.state !== 'running') return undefined;
    if (task.workerId !== lease.workerId || task.generation !== lease.generation) return undefined;
    if (task.leaseUntil === undefined || task.leaseUntil <= this.now) return undefined;
    return task;
  }

  private markRunning(task: ReferenceTask, workerId: string, at: number): ClaimAnswer {
    // Q7: worker id, generation + 1, attempts + 1, lease until now + leaseMs.
    task.state = 'running';
    task.workerId = workerId;
    task.generation++;
    task.attempts++;
    task.leaseUntil = at + this.config.leaseMs;
    task.firstClaimedAt ??= at;
    task.events++;
    this.leases.push({ taskId: task.id, workerId, generation: task.generation });
    const { id, tenant, topic, version, priority, generation, attempts, leaseUntil, cancelRequested } = task;
    return { ok: true, id, tenant, topic, version, priority, generation, attempt: attempts, leaseUntil, cancelRequested };
  }

  private insert(request: ReferenceRequest, inputKey: string, state: 'ready' | 'superseded'): ReferenceTask {
    const task: ReferenceTask = {
      id: this.tasks.length + 1,
      tenant: request.tenant,
      topic: request.topic,
      version: request.version,
      priority: request.priority,
      inputKey,
      deadline: request.deadline,
      state,
      generation: 0,
      attempts: 0,
      workerId: undefined,
      leaseUntil: undefined,
      enqueuedAt: this.now,
      notBefore: this.now,
      firstClaimedAt: undefined,
      cancelRequested: false,
      outcome: undefined,
      events: 1,
      checkpoints: 0,
    };
    this.tasks.push(task);
    return task;
  }

  private end(task: ReferenceTask, state: TaskState, outcome?: ReferenceTask['outcome']): void {
    task.state = state;
    task.leaseUntil = undefined;
    if (outcome !== undefined) task.outcome = outcome;
    task.events++;
  }
}
