/**
 * Planted bugs that `leasehold check` must catch (issue 7): semantic sabotages of src/, kept as data.
 *
 * Each entry is one exact find-and-replace in one file of src/. `npm run mutants` (tools/mutants/run.ts)
 * applies it to a temporary copy of the project, runs the gate there and reports whether it went red,
 * and which invariant turned it red. Nothing here is a flag or a branch in src/: the real code never
 * knows it is being sabotaged. A `find` that does not occur exactly once in the current file fails
 * loudly (catalogue.test.ts in CI, and the runner before it runs anything), so a refactor of src/
 * cannot quietly turn a sabotage into a no-op that "passes".
 *
 * The bugs are drawn from how real job queues broke (BullMQ, Sidekiq, Oban, graphile-worker, pg-boss
 * and friends): completion by id alone, lock renewal that does not check the owner, stalled-job sweeps,
 * concurrency limits over a positional window of rows, attempts counted on one path only, idempotency
 * keys minted per attempt, context leaking between conversations, jitter from ambient randomness.
 *
 * `expectedInvariant` is the invariant whose definition (SPEC, section I) the bug breaks, i.e. the one
 * that ought to catch it; the runner reports which one actually did.
 */

/**
 * SPEC section I's invariants, and Q18: a write the storage refused (a full disk, an I/O error) is rolled
 * back whole and reported to its caller, judged by sim/checkers/storage-atomic.ts; Q9: a holder that
 * heartbeats on its schedule keeps its lease (sim/checkers/q9-lease-kept.ts); config: a configuration
 * that breaks a rule is refused naming the option (sim/checkers/config-probe.ts).
 */
export const INVARIANTS = ['I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7', 'I8', 'I9', 'I10', 'I11', 'I12', 'I13', 'I14', 'I15', 'I16', 'I17', 'I18', 'I19', 'I20', 'I21', 'I22', 'Q18', 'Q9', 'config'] as const;
export type InvariantId = (typeof INVARIANTS)[number];

/**
 * Issue 15: the blind spot of the simulation a planted bug was written against, beyond the checker it
 * breaks. `gap`: a check made in one transaction and acted on in the next (only the fleet races it);
 * `workload`: something users do at an awkward moment (resends, late versions, cancels at any time);
 * `configuration`: only a non-default or edge configuration shows it; `window`: only a fault in a
 * narrow window between two awaits of a run shows it; `path`: only a rare combination of moves of the
 * state machine reaches it; `judge`: a decision src/ and the old checkers shared.
 */
export const BLIND_SPOTS = ['gap', 'workload', 'configuration', 'window', 'path', 'judge'] as const;
export type BlindSpot = (typeof BLIND_SPOTS)[number];

/** One exact find-and-replace in one file of src/. */
export interface Edit {
  file: string;
  find: string;
  replace: string;
}

export interface Sabotage {
  /** Stable kebab-case name, used by `npm run mutants -- --only id,...`. */
  id: string;
  /** The real-queue bug it imitates, and what goes wrong because of it. */
  description: string;
  /** The file it changes, relative to the repository root; always under src/. */
  file: string;
  /** The exact text it changes: must occur exactly once in `file`. */
  find: string;
  replace: string;
  /**
   * Further edits of the same bug, applied in order after the first (a bug that spans two places:
   * the check moved out of its transaction and the act that trusted it). Each must match exactly once
   * in its file as the edits before it left it.
   */
  also?: readonly Edit[];
  expectedInvariant: InvariantId;
  blindSpot?: BlindSpot;
}

/** Multi-line texts are written one line per argument, so indentation stays visible. */
const lines = (...parts: string[]) => parts.join('\n');

/** The enqueue's entry: validation, then its one write transaction (the gap bugs below split it in two). */
const ENQUEUE_ENTRY = lines(
  'export function enqueue(context: QueueContext, request: EnqueueRequest): Promise<EnqueueResult> {',
  '  const checked = validateEnqueue(request, context.config);',
  "  if (!checked.ok) return Promise.resolve({ ok: false, error: 'invalid_input', field: checked.field, message: checked.message });",
  '  const task = checked.value;',
  "  return write(context, 'enqueue', (tx, at) => enqueueIn(context, tx, at, task), { enqueue: { tenant: task.tenant, topic: task.topic, version: task.version } });",
);

/** The same entry reading `read` in a transaction of its own first, and handing it on as context[field]. */
function enqueueReadingFirst(field: string, read: string): string {
  return lines(
    'export async function enqueue(context: QueueContext, request: EnqueueRequest): Promise<EnqueueResult> {',
    '  const checked = validateEnqueue(request, context.config);',
    "  if (!checked.ok) return Promise.resolve({ ok: false, error: 'invalid_input', field: checked.field, message: checked.message });",
    '  const task = checked.value;',
    `  const seen = { ...context, ${field}: await ${read} };`,
    "  return write(seen, 'enqueue', (tx, at) => enqueueIn(seen, tx, at, task), { enqueue: { tenant: task.tenant, topic: task.topic, version: task.version } });",
  );
}

export const SABOTAGES: readonly Sabotage[] = [
  // ---------------------------------------------------------------- I1 no double claim
  {
    id: 'generation-not-bumped',
    description:
      'The fencing token is reused on re-claim: a takeover hands out the generation the previous holder had (generation = max(old, 1) instead of old + 1), so the token no longer tells two holders apart.',
    file: 'src/queue/claim.ts',
    find: 'const generation = row.generation + 1;',
    replace: 'const generation = Math.max(row.generation, 1);',
    expectedInvariant: 'I1',
  },

  // ---------------------------------------------------------------- I2 stale leases rejected
  {
    id: 'stalled-sweep-by-claim-time',
    description:
      'A stalled-job sweep that judges by claim time, not by the renewed lease: expireLeases() treats every task claimed more than 30 s ago as stalled, so a live worker that heartbeats on time loses its task and the run is retried (Q10).',
    file: 'src/store/sql/claim.ts',
    find: lines(
      "  `SELECT ${HOLDING_COLUMNS} FROM tasks",
      "                      WHERE ${OCCUPYING} AND state = 'running' AND lease_until <= :at ORDER BY lease_until, id`,",
    ),
    replace: lines(
      "  `SELECT id, tenant, state, generation, worker_id, claimed_at + 30000 AS lease_until, hold_state FROM tasks",
      "                      WHERE ${OCCUPYING} AND state = 'running' AND claimed_at + 30000 <= :at ORDER BY lease_until, id`,",
    ),
    expectedInvariant: 'I2',
  },
  {
    id: 'heartbeat-keeps-old-lease',
    description:
      'A heartbeat that answers ok but does not move the lease (SET lease_until = lease_until): every run loses its lease leaseMs after the claim however often it heartbeats, and a sweep takes it from a live worker.',
    file: 'src/store/sql/holders.ts',
    find: '  `UPDATE tasks SET lease_until = :leaseUntil WHERE ${FENCE} RETURNING cancel_requested`,',
    replace: '  `UPDATE tasks SET lease_until = lease_until + 0 * :leaseUntil WHERE ${FENCE} RETURNING cancel_requested`,',
    expectedInvariant: 'I2',
  },
  {
    id: 'heartbeat-renews-any-holder',
    description:
      "Lock renewal that does not check the owner: the heartbeat UPDATE renews the lease of whoever holds the running task (WHERE id and state only), so a zombie's heartbeat succeeds and keeps the new holder's lease alive.",
    file: 'src/store/sql/holders.ts',
    find: '  `UPDATE tasks SET lease_until = :leaseUntil WHERE ${FENCE} RETURNING cancel_requested`,',
    replace: "  `UPDATE tasks SET lease_until = :leaseUntil WHERE id = :id AND state = 'running' AND :workerId = :workerId AND :generation = :generation AND :now = :now RETURNING cancel_requested`,",
    expectedInvariant: 'I2',
  },
  {
    id: 'complete-by-id-alone',
    description:
      "Completion keyed by task id alone after the lock moved on: complete() looks the task up by id and completes it as its current holder, whoever asked, so a stale worker's result replaces the new holder's run.",
    file: 'src/queue/holder-writes.ts',
    find: lines(
      "function* completeIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, resultJson: string): Step<CompleteResult> {",
      "  const row = yield* tx.holderRow(who.taskId);",
    ),
    replace: lines(
      "function* completeIn(context: QueueContext, tx: StoreTx, at: number, asked: Holder, resultJson: string): Step<CompleteResult> {",
      "  const row = yield* tx.holderRow(asked.taskId);",
      "  const who = row?.state === 'running' ? { taskId: asked.taskId, workerId: row.worker_id ?? asked.workerId, generation: row.generation } : asked;",
    ),
    expectedInvariant: 'I2',
  },
  {
    id: 'checkpoint-unfenced',
    description:
      "An unfenced checkpoint write: the checkpoint bumps the task's event sequence under whoever holds the task now, not under the writer's own lease, so a zombie that wakes after a takeover still saves its state (and its usage) over the new holder's run.",
    file: 'src/runs/checkpoints.ts',
    find: "  const eventSeq = yield* tx.holderBumpEventSeq(fence(who, at));",
    replace: lines(
      "  const current = yield* tx.holderRow(who.taskId);",
      "  const eventSeq = yield* tx.holderBumpEventSeq(current?.state === 'running' ? { id: who.taskId, workerId: current.worker_id ?? who.workerId, generation: current.generation, now: at } : fence(who, at));",
    ),
    expectedInvariant: 'I2',
  },

  {
    id: 'heartbeat-refusal-ignored',
    description:
      "A lock-renewal loop that shrugs off a refused renewal and keeps going: the run is never told it lost the lease, so it keeps calling tools and writing until some later write is refused too (R9: stop at once, no further writes).",
    file: 'src/worker/lease-keeper.ts',
    find: "      if (answer?.ok === false && answer.error === 'stale_lease') this.markLost(during);",
    replace: "      if (answer?.ok === false && answer.error === 'stale_lease' && during !== 'heartbeat') this.markLost(during);",
    expectedInvariant: 'I2',
  },

  {
    id: 'complete-after-lease-time',
    description:
      "The lease is judged by state and generation only, not by time: a holder whose lease ran out but which no sweep has marked uncertain yet gets past the check, the fenced UPDATE then matches no row, and the core throws instead of refusing stale_lease (the window between lock expiry and the reaper).",
    file: 'src/queue/context.ts',
    find: '    row.lease_until !== null &&\n    row.lease_until > at\n',
    replace: '    row.lease_until !== null\n',
    expectedInvariant: 'I2',
  },
  {
    id: 'fence-ignores-lease-time',
    description:
      "The SQL fence without its lease time: heartbeats, checkpoints and events of a holder whose lease ran out are accepted until a sweep marks the task uncertain, so a zombie that wakes inside that window writes as if it still held the lease.",
    file: 'src/store/sql/holders.ts',
    find: "export const FENCE = `id = :id AND state = 'running' AND worker_id = :workerId AND generation = :generation AND lease_until > :now`;",
    replace: "export const FENCE = `id = :id AND state = 'running' AND worker_id = :workerId AND generation = :generation AND :now = :now`;",
    expectedInvariant: 'I2',
  },

  // ---------------------------------------------------------------- I3 quotas
  {
    id: 'quota-ignores-uncertain',
    description:
      'Uncertain tasks give up their slot: occupied slots are counted over running tasks only, so while a task whose worker may still be alive sits uncertain, another claim takes its slot.',
    file: 'src/store/sql/claim.ts',
    find: 'const OCCUPYING = OCCUPYING_SQL;',
    replace: "const OCCUPYING = `state IN ('running')`;",
    also: [
      { file: 'src/store/sql/signals.ts', find: 'const OCCUPYING = OCCUPYING_SQL;', replace: "const OCCUPYING = `state IN ('running')`;" },
      { file: 'src/store/sql/fair-share.ts', find: 'const OCCUPYING = OCCUPYING_SQL;', replace: "const OCCUPYING = `state IN ('running')`;" },
      { file: 'src/store/sql/holds.ts', find: 'const OCCUPYING = OCCUPYING_SQL;', replace: "const OCCUPYING = `state IN ('running')`;" },
      { file: 'src/store/sql/holders.ts', find: 'const OCCUPYING = OCCUPYING_SQL;', replace: "const OCCUPYING = `state IN ('running')`;" },
      { file: 'src/store/sql/tasks.ts', find: 'const OCCUPYING = OCCUPYING_SQL;', replace: "const OCCUPYING = `state IN ('running')`;" },
    ],
    expectedInvariant: 'I3',
  },
  {
    id: 'quota-positional-window',
    description:
      'A concurrency limit computed over a positional window of rows (like LRANGE 0 1): the claim counts occupied slots among the first two holding rows by id, not all of them.',
    file: 'src/store/sql/claim.ts',
    find: "rows<HoldingRow>(`SELECT ${HOLDING_COLUMNS} FROM tasks WHERE ${OCCUPYING} ORDER BY ${HOLDING_ORDER}`);",
    replace: "rows<HoldingRow>(`SELECT ${HOLDING_COLUMNS} FROM tasks WHERE ${OCCUPYING} ORDER BY id LIMIT 2`);",
    expectedInvariant: 'I3',
  },
  {
    id: 'tenant-quota-off-by-one',
    description: 'Per-tenant limit off by one: a tenant is blocked only once it holds more than its limit (> instead of >=), so it gets limit + 1 slots.',
    file: 'src/queue/claim.ts',
    find: "for (const [tenant, n] of occupied) if (n >= (Object.hasOwn(tenantLimits, tenant) ? (tenantLimits[tenant] as number) : perTenantLimit)) blocked.add(tenant);",
    replace: "for (const [tenant, n] of occupied) if (n > (Object.hasOwn(tenantLimits, tenant) ? (tenantLimits[tenant] as number) : perTenantLimit)) blocked.add(tenant);",
    expectedInvariant: 'I3',
  },
  {
    id: 'global-quota-off-by-one',
    description: 'Global limit off by one: the claim refuses only when more than globalLimit slots are held, so one more task runs than the limit allows.',
    file: 'src/queue/claim.ts',
    find: "if (holding.length >= config.globalLimit) return",
    replace: "if (holding.length > config.globalLimit) return",
    expectedInvariant: 'I3',
  },

  // ---------------------------------------------------------------- I4 capacity
  {
    id: 'capacity-counts-every-row',
    description:
      'Capacity counted with COUNT(*) over the whole table instead of ready + running + uncertain: finished tasks keep counting, and the queue refuses new topics as full while it is nearly empty.',
    file: 'src/queue/enqueue.ts',
    find: '    inFlight: (yield* tx.counterLive()) - 1,',
    replace: '    inFlight: (yield* tx.taskList()).length - 1,',
    expectedInvariant: 'I4',
  },
  {
    id: 'capacity-overrun-by-one',
    description: 'Capacity check off by one: a new topic is refused only when the queue would exceed capacity by two, so capacity + 1 tasks are live.',
    file: 'src/queue/enqueue.ts',
    find: '    inFlight: (yield* tx.counterLive()) - 1,',
    replace: '    inFlight: (yield* tx.counterLive()) - 2,',
    expectedInvariant: 'I4',
  },

  // ---------------------------------------------------------------- I5 priority and aging
  {
    id: 'claim-ignores-aging',
    description: 'No aging at claim: candidates are ranked by base priority alone, so a low-priority task starves under a flood of higher-priority work.',
    file: 'src/queue/claim.ts',
    find: 'head.score = score(head.priority, head.enqueued_at, at, config);',
    replace: 'head.score = head.priority;',
    expectedInvariant: 'I5',
  },
  {
    id: 'claim-newest-first',
    description: 'LIFO within a priority level: the level head is the newest ready task (enqueued_at DESC), so among equals the latest arrival jumps the queue.',
    file: 'src/store/sql/claim.ts',
    find: lines('  ORDER BY priority DESC, enqueued_at, id', '  LIMIT 1`);'),
    replace: lines('  ORDER BY priority DESC, enqueued_at DESC, id', '  LIMIT 1`);'),
    // SQLite's ready heads seek the same level head in their own text.
    also: [{ file: 'src/store/sql/claim.ts', find: 'ORDER BY h.priority DESC, h.enqueued_at, h.id LIMIT 1)', replace: 'ORDER BY h.priority DESC, h.enqueued_at DESC, h.id LIMIT 1)' }],
    expectedInvariant: 'I5',
  },
  {
    id: 'aging-formula-dropped',
    description: 'No aging in the score formula itself: score = base priority, whatever the wait (the aging term multiplied away).',
    file: 'src/queue/scoring.ts',
    find: 'return basePriority + Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));',
    replace: 'return basePriority + 0 * Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));',
    expectedInvariant: 'I5',
  },
  {
    id: 'aging-cap-off-by-one',
    description: 'The aging cap one point too high in the score formula: a task that has waited past the cap keeps climbing one more point, so a capped task overtakes a higher base priority it should only tie with.',
    file: 'src/queue/scoring.ts',
    find: 'return basePriority + Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));',
    replace: 'return basePriority + Math.min(config.agingCap + 1, Math.floor(waitMs / config.agingPeriodMs));',
    expectedInvariant: 'I5',
  },
  {
    id: 'claim-ignores-deadline',
    description: 'A claim whose deadline check can never fire (Q14, lost in a refactor): an expired task is run instead of ending expired, and its effects happen after the customer stopped waiting.',
    file: 'src/queue/claim.ts',
    find: 'if (row.deadline !== null && row.deadline <= at) {',
    replace: 'if (row.deadline !== null && row.deadline < Number.MIN_SAFE_INTEGER) {',
    expectedInvariant: 'I5',
  },

  // ---------------------------------------------------------------- I6 bounded retries
  {
    id: 'attempts-not-counted-at-claim',
    description:
      'Attempts counted on one path and not another: the claim no longer bumps attempts (only deliveries), so every claim reports attempt 1, the retry backoff never grows and maxAttempts never stops a task that keeps failing.',
    file: 'src/store/sql/task-writes.ts',
    find: 'attempts = attempts + 1, deliveries = deliveries + 1, lease_until = :leaseUntil,',
    replace: 'attempts = attempts, deliveries = deliveries + 1, lease_until = :leaseUntil,',
    expectedInvariant: 'I6',
  },
  {
    id: 'fatal-error-retried',
    description:
      'Every failure treated as retryable: the retry decision no longer checks the error class, so a permission_denied or a business_error is retried with backoff (burning attempts, repeating tool calls) instead of failing at once (Q16).',
    file: 'src/queue/holder-writes.ts',
    find: "  if (!retryable) return { retry: false as const, reason: 'not_retryable' };",
    replace: "  if (!retryable && retryable) return { retry: false as const, reason: 'not_retryable' };",
    expectedInvariant: 'I6',
  },
  {
    id: 'confirm-ignores-deliveries',
    description:
      'Deliveries counted on one path only: fail() checks maxDeliveries but confirmStopped() does not, so a poison task that kills its worker every time goes back to ready past its last delivery.',
    file: 'src/queue/operator.ts',
    find: lines(
      "  else if (row.deliveries >= config.maxDeliveries) [next, reason] = ['failed', 'deliveries_exhausted'];",
      "",
    ),
    replace: "",
    expectedInvariant: 'I6',
  },

  {
    id: 'attempts-bound-off-by-one',
    description:
      'The attempt bound checked with > instead of >=: a task whose last allowed attempt failed retryably is scheduled for one more attempt (the classic off-by-one of a retry counter).',
    file: 'src/queue/holder-writes.ts',
    find: "  if (row.attempts >= config.maxAttempts) return { retry: false as const, reason: 'attempts_exhausted' };",
    replace: "  if (row.attempts > config.maxAttempts) return { retry: false as const, reason: 'attempts_exhausted' };",
    expectedInvariant: 'I6',
  },

  // ---------------------------------------------------------------- I7 settlement
  {
    id: 'settle-first-checkpoint',
    description: "Settlement reads a stale usage row: the charge is computed from the run's first checkpoint (ORDER BY seq) instead of its last, so a run is under-charged.",
    file: 'src/store/sql/checkpoints.ts',
    find: "pluck<string>('SELECT usage FROM checkpoints WHERE task_id = :task_id ORDER BY seq DESC LIMIT 1');",
    replace: "pluck<string>('SELECT usage FROM checkpoints WHERE task_id = :task_id ORDER BY seq LIMIT 1');",
    expectedInvariant: 'I7',
  },
  {
    id: 'hold-kept-on-failure',
    description:
      "Settlement on the success path only: a run that ends failed never closes its hold, so the credits stay reserved for ever. (Since migration 5 the schema refuses an ended task that still holds, so the gate sees this as a crash before any checker runs.)",
    file: 'src/queue/transition.ts',
    find: 'const hold: HoldClosure | null = ends && isHoldOpen(row.hold_state) ? yield* closureFor(context, tx, row.id, why) : null;',
    replace: "const hold: HoldClosure | null = ends && isHoldOpen(row.hold_state) && to !== 'failed' ? yield* closureFor(context, tx, row.id, why) : null;",
    expectedInvariant: 'I7',
  },
  {
    id: 'settlement-ignores-hold-state',
    description:
      "Settlement without its state condition: the closing UPDATE drops `hold_state = 'held'`, so a run that ends after the reconciler released its hold (holdTtlMs) closes it a second time, with a second ledger row, instead of finding it already closed.",
    file: 'src/queue/transition.ts',
    find: 'const hold: HoldClosure | null = ends && isHoldOpen(row.hold_state) ? yield* closureFor(context, tx, row.id, why) : null;',
    replace: 'const hold: HoldClosure | null = ends && row.hold_state !== null ? yield* closureFor(context, tx, row.id, why) : null;',
    expectedInvariant: 'I7',
  },

  // ---------------------------------------------------------------- I8 effects once
  {
    id: 'effect-key-per-attempt',
    description:
      'An idempotency key minted per attempt instead of per run: the write tool\'s request key fingerprints the delivery attempt too, so a takeover that re-runs checkpoint A\'s calls sends the effect again under a fresh key.',
    file: 'src/worker/run.ts',
    find: '      requestKey: requestKey(task.id, call.tool, call.args),',
    replace: '      requestKey: requestKey(task.id, call.tool, { args: call.args, attempt: task.attempt }),',
    expectedInvariant: 'I8',
  },
  {
    id: 'effect-ledger-skipped',
    description:
      'A write effect made without consulting the ledger: a takeover calls the write tool again even when the ledger already holds its result (R2), relying on the external system to deduplicate.',
    file: 'src/worker/run.ts',
    find: lines(
      "    const recorded = await this.retryBusy(`effect lookup ${call.tool}`, () => deps.queue.effectResult(context.requestKey));",
      "    if (recorded !== undefined) return recorded;",
      "",
    ),
    replace: "",
    expectedInvariant: 'I8',
  },

  {
    id: 'tool-call-past-deadline',
    description:
      'A deadline checked only at claim and at commit, not before each tool call (Q14): a run that passes its deadline mid-step goes on calling tools, and its write tools send effects for a task that will end expired.',
    file: 'src/worker/run.ts',
    find: "    if (deadline !== undefined && this.deps.clock.now() >= deadline) throw new StopRun('deadline', where);\n",
    replace: '',
    expectedInvariant: 'I8',
  },

  // ---------------------------------------------------------------- I9 one task per key
  {
    id: 'replace-answers-old-id',
    description:
      'An upsert that answers with the id of the row it replaced: enqueueing a newer version of a waiting topic returns the superseded task\'s id, so the client tracks a task that will never run.',
    file: 'src/queue/enqueue.ts',
    find: "return { taskId: created.taskId, status: replaced.length > 0 ? 'replaced' : 'enqueued' };",
    replace: "return { taskId: replaced[0]?.id ?? created.taskId, status: replaced.length > 0 ? 'replaced' : 'enqueued' };",
    expectedInvariant: 'I9',
  },
  {
    id: 'idempotency-ignores-input',
    description:
      'A unique key that lets a conflicting resend through: a second enqueue of the same (tenant, topic, version) with different input is answered duplicate instead of idempotency_conflict.',
    file: 'src/queue/enqueue.ts',
    find: "if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: 'duplicate' };",
    replace: "if (existing.input_hash !== undefined) return { ok: true, taskId: existing.id, status: 'duplicate' };",
    expectedInvariant: 'I9',
  },

  // ---------------------------------------------------------------- I10 supersede
  {
    id: 'supersede-running',
    description:
      'Supersede that also supersedes running tasks: a newer version turns the older version superseded even while a worker runs it, instead of letting it finish as stale_input.',
    file: 'src/store/sql/tasks.ts',
    find: "WHERE tenant = :tenant AND topic = :topic AND version < :version AND state = 'ready' AND generation = 0 ORDER BY id",
    replace: "WHERE tenant = :tenant AND topic = :topic AND version < :version AND state IN ('ready', 'running') ORDER BY id",
    expectedInvariant: 'I10',
  },

  {
    id: 'late-older-version-runs',
    description: 'A version older than one already queued is accepted as a new ready task instead of being superseded on arrival (Q2): a late duplicate of an old correction runs after the newer input.',
    file: 'src/queue/enqueue.ts',
    find: "  if (latest !== null && latest > task.version) {",
    replace: "  if (false && latest !== null) {",
    expectedInvariant: 'I10',
  },
  {
    id: 'supersede-retry-waiting',
    description:
      'Supersede by state alone: a newer version supersedes every ready older version, including one that already ran and waits for a retry, so a started task ends superseded instead of finishing as stale_input.',
    file: 'src/store/sql/tasks.ts',
    find: "AND version < :version AND state = 'ready' AND generation = 0 ORDER BY id",
    replace: "AND version < :version AND state = 'ready' ORDER BY id",
    expectedInvariant: 'I10',
  },

  // ---------------------------------------------------------------- I11 no lost task
  {
    id: 'retry-backoff-in-seconds',
    description:
      'A units bug in the retry backoff: the delay (milliseconds) is applied as seconds, so a retried task waits half an hour or more and is effectively lost.',
    file: 'src/queue/holder-writes.ts',
    find: "    const notBefore = at + decision.backoffMs;",
    replace: "    const notBefore = at + decision.backoffMs * 1000;",
    expectedInvariant: 'I11',
  },
  {
    id: 'enqueue-not-synced',
    description:
      "An acknowledged enqueue that a power loss can take back: the default durability ('acknowledged') moves enqueue to the writes that stay at synchronous NORMAL, so the client is told its task is accepted before the WAL is synced, and a power cut before the next synced commit loses the task (Q1). The power-loss fault's seeds see the task gone, or its id handed to a later enqueue.",
    file: 'src/store/durability.ts',
    find: lines('export const LOSABLE_WRITES: ReadonlySet<string> = new Set([', "  'claim',"),
    replace: lines('export const LOSABLE_WRITES: ReadonlySet<string> = new Set([', "  'enqueue',", "  'claim',"),
    // And out of the writes synced after their commit: listed there too, the enqueue would still be synced.
    also: [{ file: 'src/store/durability.ts', find: "export const SYNCED_AFTER_COMMIT: ReadonlySet<string> = new Set(['enqueue']);", replace: 'export const SYNCED_AFTER_COMMIT: ReadonlySet<string> = new Set([]);' }],
    expectedInvariant: 'I11',
  },
  {
    id: 'wal-synced-before-commit',
    description:
      "A store that syncs before it commits instead of after (the flush called ahead of COMMIT, as in drivers that fsync and then end the transaction): the sync keeps only what was committed before, the enqueue itself is committed at NORMAL and never synced, so an acknowledged task is lost to a power cut before the next synced commit (Q1).",
    file: 'src/store/sqlite-store.ts',
    find: lines(
      '    const result = this.commit(operation, readClock, body);',
      '    // An enqueue (durability.ts SYNCED_AFTER_COMMIT) is answered once the WAL is synced through its',
      '    // commit. The commit is visible already, and its notices are out: the next writer (a worker\'s claim',
      '    // of the task just enqueued) takes the write lock while this sync runs, not after it. One that wrote',
      '    // nothing is synced too: its answer (a duplicate) may rest on another enqueue\'s commit whose sync',
      '    // has not finished, or failed.',
      '    if (this.walPath !== undefined && this.durability !== undefined && syncedAfterCommit(this.durability, operation)) this.syncWal(operation);',
    ),
    replace: lines(
      '    if (this.durability !== undefined && syncedAfterCommit(this.durability, operation)) this.syncWal(operation);',
      '    const result = this.commit(operation, readClock, body);',
    ),
    expectedInvariant: 'I11',
  },
  {
    id: 'database-file-synced-not-wal',
    description:
      "The sync after a commit aimed at the database file instead of its write-ahead log (the -wal suffix lost, as in stores that fsync the file they opened): in WAL mode the commit lives in the log until a checkpoint, so the fdatasync keeps nothing of it, and an acknowledged enqueue is lost to a power cut (Q1).",
    file: 'src/store/sqlite-store.ts',
    find: "    this.walPath = db.memory || String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal' ? undefined : `${resolve(db.name)}-wal`;",
    replace: "    this.walPath = db.memory || String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal' ? undefined : resolve(db.name);",
    expectedInvariant: 'I11',
  },

  // ---------------------------------------------------------------- I12 uncertain is held
  {
    id: 'lease-expiry-to-ready',
    description:
      "Lease expiry that goes straight back to ready: a running task past its lease is re-queued at once (through the re-queue edge a handed-back run takes) instead of held uncertain, so it is re-run while its worker may be paused or slow.",
    file: 'src/queue/claim.ts',
    find: "    yield* transition(context, tx, at, { by: 'other', event: 'expiry', row, to: 'uncertain' }, {",
    replace: "    yield* transition(context, tx, at, { by: 'other', event: 'interrupt', row, to: 'ready' }, {",
    expectedInvariant: 'I12',
  },
  {
    id: 'reconcile-ignores-policy',
    description:
      "A stalled-job sweep that re-runs jobs whatever the policy: the reconciler re-queues uncertain tasks after graceMs under 'hold' too, without any confirmation that the worker stopped.",
    file: 'src/runs/reconciler.ts',
    find: "if (config.reconciliation === 'auto') {",
    replace: "if (config.reconciliation === 'auto' || config.reconciliation === 'hold') {",
    expectedInvariant: 'I12',
  },
  {
    id: 'confirm-accepts-old-generation',
    description:
      'confirmStopped that does not match the generation: a late confirmation for an older generation (its worker really died) frees the current generation, whose worker may be alive or paused.',
    file: 'src/queue/operator.ts',
    find: 'if (row.generation !== generation) {',
    replace: 'if (row.generation < generation) {',
    expectedInvariant: 'I12',
  },

  {
    id: 'confirm-ignores-cancel',
    description:
      "A confirmation that forgets the pending cancel: an uncertain task whose cancel was requested is re-queued when its worker's stop is confirmed, and runs again.",
    file: 'src/queue/operator.ts',
    find: lines(
      "  if (row.cancel_requested === 1) next = 'cancelled';",
      "  else if",
    ),
    replace: lines(
      "  if (row.cancel_requested === 2) next = 'cancelled';",
      "  else if",
    ),
    expectedInvariant: 'I12',
  },
  {
    id: 'cancel-of-uncertain-dropped',
    description:
      "A cancel request recorded only for running tasks: the operator is told cancel_requested for an uncertain task, but nothing is persisted, and the confirmation re-queues it.",
    file: 'src/store/sql/holders.ts',
    find: '                      WHERE id = :task_id AND ${OCCUPYING} AND cancel_requested = 0',
    replace: "                      WHERE id = :task_id AND state IN ('running') AND cancel_requested = 0",
    expectedInvariant: 'I12',
  },

  // ---------------------------------------------------------------- I13 isolation
  {
    id: 'run-messages-pooled',
    description:
      "Conversation buffers pooled across runs: a fresh run reuses (and clears) one module-level message array instead of a new one, so concurrent runs of one worker process write into each other's history and one tenant's messages end up in another tenant's checkpoints and results.",
    file: 'src/worker/resume.ts',
    find: lines(
      "export async function resumeState(queue: WorkQueue, workerId: string, task: ClaimedTask): Promise<(RunState & { ok: true }) | { ok: false; error: 'stale_lease'; message: string }> {",
      "  // A first claim has nothing to resume: no generation before it could have checkpointed.",
      "  const checkpoint = task.generation === 1 ? undefined : await queue.lastCheckpoint(task.id);",
      "  if (checkpoint === undefined) {",
      "    return { ok: true, step: 0, messages: [], usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } };",
    ),
    replace: lines(
      "const pooledMessages: RunState['messages'] = [];",
      "export async function resumeState(queue: WorkQueue, workerId: string, task: ClaimedTask): Promise<(RunState & { ok: true }) | { ok: false; error: 'stale_lease'; message: string }> {",
      "  // A first claim has nothing to resume: no generation before it could have checkpointed.",
      "  const checkpoint = task.generation === 1 ? undefined : await queue.lastCheckpoint(task.id);",
      "  if (checkpoint === undefined) {",
      "    pooledMessages.length = 0;",
      "    return { ok: true, step: 0, messages: pooledMessages, usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } };",
    ),
    expectedInvariant: 'I13',
  },
  {
    id: 'tool-client-first-tenant',
    description:
      "A tool client cached process-wide with the first tenant that used it (think an API client built once with one tenant's credentials): every later write effect goes to the external system under that tenant's identity.",
    file: 'src/worker/run.ts',
    find: '      tenant: task.tenant,\n',
    replace: '      tenant: ((globalThis as { toolTenant?: string }).toolTenant ??= task.tenant),\n',
    expectedInvariant: 'I13',
  },
  {
    id: 'tenant-list-unfiltered',
    description: "The tenant filter dropped from a tenant-scoped read: listForTenant returns every tenant's tasks.",
    file: 'src/store/sql/tasks.ts',
    find: "rows<TaskRow>('SELECT * FROM tasks WHERE tenant = :tenant ORDER BY id');",
    replace: "rows<TaskRow>('SELECT * FROM tasks WHERE tenant = :tenant OR 1 ORDER BY id');",
    expectedInvariant: 'I13',
  },
  {
    id: 'supersede-across-tenants',
    description:
      "The tenant filter dropped from supersede: a newer version of topic T supersedes the waiting versions of T in every tenant, so one tenant's enqueue cancels another tenant's work.",
    file: 'src/store/sql/tasks.ts',
    find: "WHERE tenant = :tenant AND topic = :topic AND version < :version AND state = 'ready'",
    replace: "WHERE (tenant = :tenant OR 1) AND topic = :topic AND version < :version AND state = 'ready'",
    expectedInvariant: 'I13',
  },

  // ---------------------------------------------------------------- I14 determinism
  {
    id: 'jitter-ambient-random',
    description: 'Retry jitter drawn from Math.random instead of the injected Random port: the same seed no longer gives the same backoffs, so a failing seed cannot be replayed.',
    file: 'src/queue/holder-writes.ts',
    find: 'const backoffMs = retryBackoffMs(row.attempts, context.random.next(), config);',
    replace: 'const backoffMs = retryBackoffMs(row.attempts, Math.random(), config);', // allow-ambient: sabotage text, applied only to a temporary copy
    expectedInvariant: 'I14',
  },

  // ---------------------------------------------------------------- a decision the judge once shared
  // Each of these changes a decision src/ and the old checkers both took from one module (the request
  // key, the credit rate, the retryable classes), so a judge that imported it agreed with the bug. The
  // checkers restate SPEC in sim/checkers/spec-rules.ts now; these prove the restatement is what judges.
  {
    id: 'request-key-order-sensitive',
    description:
      'The effect key stops treating an array of items with ids as a set (an idempotency key hashed over the payload as sent, as clients that build keys from JSON.stringify do): the same order re-sent with its items in another order gets another key, so a resumed run that rebuilds the payload in another order executes the effect twice (R3).',
    file: 'src/worker/fingerprint.ts',
    find: 'if (items.length > 0 && items.every(hasId)) {',
    replace: 'if (items.length < 0) {',
    expectedInvariant: 'I8',
    blindSpot: 'judge',
  },
  {
    id: 'credit-rate-halved',
    description:
      'The default credit rate drifts (tokensPerCredit 1,000 becomes 500, a unit mix-up of the kind billing code ships): every settlement charges twice the credits its usage earns (R4).',
    file: 'src/queue/config.ts',
    find: 'tokensPerCredit: 1_000,',
    replace: 'tokensPerCredit: 500,',
    expectedInvariant: 'I7',
    blindSpot: 'judge',
  },
  {
    id: 'permission-denied-retried',
    description:
      'A fatal error class is classed retryable (permission_denied joins the retry list, as queues that retry every thrown error do): a run refused by a tool is retried with backoff instead of failing at once (Q16).',
    file: 'src/queue/types.ts',
    find: "export const RETRYABLE_ERROR_CLASSES = ['rate_limited', 'transient_network', 'db_busy', 'tool_timeout'] as const;",
    replace: "export const RETRYABLE_ERROR_CLASSES = ['rate_limited', 'transient_network', 'db_busy', 'tool_timeout', 'permission_denied'] as const;",
    expectedInvariant: 'I6',
    blindSpot: 'judge',
  },
  // ---------------------------------------------------------------- issue 15: the simulation's blind spots
  // Written against the five ways bugs that peer queues shipped slipped past the gate (BLIND_SPOTS), none
  // of them a variant of an entry above. Gap bugs need the fleet (sim/store/fleet.ts) to race the two
  // transactions; workload bugs the client swarm; configuration bugs a non-default configuration; window
  // bugs a fault at one await of a run; path bugs a rare combination of moves.
  {
    id: 'claim-slots-counted-outside',
    description:
      "The claim counts occupied slots in a read of its own before its write transaction (a concurrency limit checked outside the lock, as group and rate limiters built from a count query and a separate take have shipped): two claimers that both counted a free slot both take a task, and the limit is exceeded (Q6).",
    file: 'src/queue/claim.ts',
    find: lines(
      'export function claim(context: QueueContext, workerIdArgument: string): Promise<ClaimResult> {',
      '  const workerId = requireWorkerId(workerIdArgument);',
      '  // What the store may read ahead (ReadsFirst.claim): which head this claim most likely picks.',
      '  const { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } = context.config;',
      "  return write(context, 'claim', (tx, at) => claimIn(context, tx, at, workerId), { claim: { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } });",
      '}',
      '',
      'function* claimIn(context: QueueContext, tx: StoreTx, at: number, workerId: string): Step<ClaimResult> {',
      '  const { config } = context;',
      '  const holding = yield* tx.claimHolding();',
      '  yield* expireOverdue(context, tx, holding, at);',
      "  // Q6: a claim needs room in the global limit and in its tenant's limit; uncertain keeps its slot.",
      "  if (holding.length >= config.globalLimit) return { ok: false, reason: (yield* tx.claimAnyReady()) ? 'quota' : 'empty' };",
      '  const blocked = blockedTenants(context, holding);',
    ),
    replace: lines(
      'export async function claim(context: QueueContext, workerIdArgument: string): Promise<ClaimResult> {',
      '  const workerId = requireWorkerId(workerIdArgument);',
      "  const counted = await context.store.read('claim', (tx) => tx.claimHolding());",
      '  const { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } = context.config;',
      "  return write(context, 'claim', (tx, at) => claimIn(context, tx, at, workerId, counted), { claim: { agingCap, agingPeriodMs, perTenantLimit, tenantLimits } });",
      '}',
      '',
      'function* claimIn(context: QueueContext, tx: StoreTx, at: number, workerId: string, counted: readonly HoldingRow[]): Step<ClaimResult> {',
      '  const { config } = context;',
      '  const holding = yield* tx.claimHolding();',
      '  yield* expireOverdue(context, tx, holding, at);',
      "  if (counted.length >= config.globalLimit) return { ok: false, reason: (yield* tx.claimAnyReady()) ? 'quota' : 'empty' };",
      '  const blocked = blockedTenants(context, counted);',
    ),
    expectedInvariant: 'I3',
    blindSpot: 'gap',
  },
  {
    id: 'capacity-counted-outside',
    description:
      'The enqueue reads the live count before its write transaction and decides capacity on that count (a bounded queue whose size check and push are two round trips): two enqueues that both saw one free place are both accepted, and the queue holds more live tasks than its capacity (Q3).',
    file: 'src/queue/enqueue.ts',
    find: ENQUEUE_ENTRY,
    replace: enqueueReadingFirst('counted', "context.store.read('enqueue', (tx) => tx.counterLive())"),
    also: [
      {
        file: 'src/queue/enqueue.ts',
        find: '    inFlight: (yield* tx.counterLive()) - 1,',
        replace: '    inFlight: (context as { counted?: number }).counted!,',
      },
    ],
    expectedInvariant: 'I4',
    blindSpot: 'gap',
  },
  {
    id: 'supersede-latest-read-outside',
    description:
      "The enqueue looks up the topic's newest version in a read before its write transaction (a singleton/version check made in one query and trusted in the next): an older version that races a newer one of the same topic is stored ready instead of superseded, and both may run (Q2).",
    file: 'src/queue/enqueue.ts',
    find: ENQUEUE_ENTRY,
    replace: enqueueReadingFirst('latestSeen', "context.store.read('enqueue', (tx) => tx.taskLatestVersion(task.tenant, task.topic))"),
    also: [
      {
        file: 'src/queue/enqueue.ts',
        find: '  const latest = yield* tx.taskLatestVersion(task.tenant, task.topic);',
        replace: '  const latest = (context as { latestSeen?: number | null }).latestSeen ?? null;',
      },
    ],
    expectedInvariant: 'I10',
    blindSpot: 'gap',
  },
  {
    id: 'latest-version-ignores-ended',
    description:
      "The newest-version lookup only sees live tasks (a dedupe window over active jobs only, as singleton keys that lapse when the job completes): a late older version that arrives after the newer version finished is stored ready and runs after it (Q2).",
    file: 'src/store/sql/tasks.ts',
    find: "pluck<number | null>('SELECT MAX(version) AS v FROM tasks WHERE tenant = :tenant AND topic = :topic');",
    replace: "pluck<number | null>(\"SELECT MAX(version) AS v FROM tasks WHERE tenant = :tenant AND topic = :topic AND state IN ('ready', 'running', 'uncertain')\");",
    expectedInvariant: 'I10',
    blindSpot: 'workload',
  },
  {
    id: 'resend-of-running-answered-new',
    description:
      'A resend of a request whose task is running is answered as a new task (status enqueued, the id of the running task): an API that answers 201 Created to a dedup hit, so the client believes a second run was queued (Q1).',
    file: 'src/queue/enqueue.ts',
    find: "if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: 'duplicate' };",
    replace: "if (existing.input_hash === task.inputHash) return { ok: true, taskId: existing.id, status: existing.state === 'running' ? 'enqueued' : 'duplicate' };",
    expectedInvariant: 'I9',
    blindSpot: 'workload',
  },
  {
    id: 'cancel-after-end-acknowledged',
    description:
      'A cancel of a task that already ended is acknowledged as requested instead of refused already_terminal, and nothing is written: the operator is told a cancel is on its way for a task that finished (Q13).',
    file: 'src/queue/operator.ts',
    find: "if (isTerminal(state)) return { ok: false, error: 'already_terminal', state, message: `task ${taskId} already ended ${state}` };",
    replace: "if (isTerminal(state)) return { ok: true, state: 'cancel_requested' };",
    expectedInvariant: 'I12',
    blindSpot: 'workload',
  },
  {
    id: 'backoff-cap-dropped',
    description:
      'The retry backoff loses its cap (min(base * 2^attempts, max) becomes base * 2^attempts): with the defaults the cap is never reached within the attempts allowed, so only a configuration whose maxDelayMs is below base * 2^attempts shows the backoff running past it (Q16).',
    file: 'src/queue/scoring.ts',
    find: 'const exponential = Math.min(config.baseDelayMs * 2 ** Math.min(attempts, 52), config.maxDelayMs);',
    replace: 'const exponential = config.baseDelayMs * 2 ** Math.min(attempts, 52);',
    expectedInvariant: 'I6',
    blindSpot: 'configuration',
  },
  {
    id: 'lease-renewed-for-default',
    description:
      "A heartbeat renews the lease for the default 30 s instead of the configured leaseMs (a renewal interval hard-coded where the lock duration is configurable): invisible at the default, a lease that is too long or too short under any other configuration (Q9).",
    file: 'src/queue/holder-writes.ts',
    find: '  const leaseUntil = at + context.config.leaseMs;\n  const renewed = yield* tx.holderHeartbeat(fence(who, at), leaseUntil);',
    replace: '  const leaseUntil = at + 30_000;\n  const renewed = yield* tx.holderHeartbeat(fence(who, at), leaseUntil);',
    expectedInvariant: 'I2',
    blindSpot: 'configuration',
  },
  {
    id: 'aging-cap-zero-unlimited',
    description:
      "An aging cap of 0 is read as 'no cap' (agingCap || infinity: a falsy check where 0 is a real value): a queue configured to age nothing ages without bound, and a long-waiting low-priority task overtakes work the operator ranked above it (Q4).",
    file: 'src/queue/scoring.ts',
    find: 'return basePriority + Math.min(config.agingCap, Math.floor(waitMs / config.agingPeriodMs));',
    replace: 'return basePriority + Math.min(config.agingCap || Number.MAX_SAFE_INTEGER, Math.floor(waitMs / config.agingPeriodMs));',
    expectedInvariant: 'I5',
    blindSpot: 'configuration',
  },
  {
    id: 'resume-from-a-skips-its-calls',
    description:
      "A takeover from checkpoint A resumes as if from B: the step whose tool calls were decided but not run is counted done, so its calls never run (a resume that trusts the step counter over the pending calls). Only a worker that dies between the two checkpoints of a step shows it (R2).",
    file: 'src/worker/resume.ts',
    find: lines(
      '  const state: RunState = { step: saved.step, messages: [...saved.messages], usage: { ...checkpoint.usage } };',
      "  if (checkpoint.kind === 'A' && saved.pending !== undefined) state.pending = saved.pending;",
    ),
    replace: "  const state: RunState = { step: checkpoint.kind === 'A' ? saved.step + 1 : saved.step, messages: [...saved.messages], usage: { ...checkpoint.usage } };",
    expectedInvariant: 'I8',
    blindSpot: 'window',
  },
  {
    id: 'usage-lost-on-resume',
    description:
      "A takeover starts the run's usage from zero instead of the checkpoint's: the model calls made before the death are never charged (R4). Only a run taken over after a checkpoint shows it.",
    file: 'src/worker/resume.ts',
    find: 'usage: { ...checkpoint.usage } };',
    replace: 'usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } };',
    expectedInvariant: 'I7',
    blindSpot: 'window',
  },
  {
    id: 'deadline-checked-on-first-step-only',
    description:
      'The deadline is checked before the tool calls of the first step only (a check placed where the run starts, not before each call): a deadline that passes between two steps of a run lets its later tool calls go out (Q14).',
    file: 'src/worker/run.ts',
    find: 'if (deadline !== undefined && this.deps.clock.now() >= deadline) throw new StopRun',
    replace: 'if (deadline !== undefined && this.state.step === 0 && this.deps.clock.now() >= deadline) throw new StopRun',
    expectedInvariant: 'I8',
    blindSpot: 'window',
  },
  {
    id: 'dead-letter-skipped-from-uncertain',
    description:
      'A task whose attempts run out while it is uncertain (its holder died, the stop is confirmed, no attempt is left) ends failed without a dead letter: the dead-letter write sits on the path from running only (R6).',
    file: 'src/queue/transition.ts',
    find: "  if (to === 'failed') yield* deadLetterIfExhausted(tx, row.id, why, at);",
    replace: "  if (to === 'failed' && row.state !== 'uncertain') yield* deadLetterIfExhausted(tx, row.id, why, at);",
    expectedInvariant: 'I6',
    blindSpot: 'path',
  },
  {
    id: 'cancel-lost-on-retry',
    description:
      'A run that fails retryably after a cancel was requested goes back to ready for its retry instead of ending cancelled (the retry decision taken before the cancel is looked at): the persisted cancel is carried into a new run that may finish the task (Q13), the path running with a cancel requested, ready, running.',
    file: 'src/queue/holder-writes.ts',
    find: lines('  if (row.cancel_requested === 1) {', "    yield* endAsHolder(context, tx, row, who, at, 'fail', 'cancelled', { errorClass, message }, { outcome: 'cancelled', ...recorded });"),
    replace: lines('  if (row.cancel_requested === 1 && !retryable) {', "    yield* endAsHolder(context, tx, row, who, at, 'fail', 'cancelled', { errorClass, message }, { outcome: 'cancelled', ...recorded });"),
    expectedInvariant: 'I12',
    blindSpot: 'path',
  },
  {
    id: 'stale-input-only-against-live-versions',
    description:
      'A result is marked stale_input only if a newer version is still live: when the newer version already finished while the older one waited for its retry (or ran long), the older result is committed as plain done, as if it were current (Q2), the path running, ready, running, done beside a newer version that ended first.',
    file: 'src/store/sql/tasks.ts',
    find: "pluck<number>('SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND version > :version LIMIT 1');",
    replace: "pluck<number>(\"SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND version > :version AND state IN ('ready', 'running', 'uncertain') LIMIT 1\");",
    expectedInvariant: 'I10',
    blindSpot: 'path',
  },

  // ---------------------------------------------------------------- Q18 storage failures (issue 15: disk full, I/O errors)
  // Caught by the storage-faults and io-errors scenarios, whose full disks and I/O errors
  // (sim/faults/disk-full.ts, io-error.ts) act beneath the store.
  {
    id: 'event-io-error-swallowed',
    description:
      "An event append that swallows an I/O error and carries on (the audit log treated as best effort, as stores that log-and-continue on EIO do): the transaction commits without its event and the call answers ok, so the task moved and its log does not say so: half-written.",
    file: 'src/store/sql/events.ts',
    find: lines('    this.send(eventInsert, params, (id) => {', '      if (id !== undefined) this.lastEventId = id;', '    });'),
    replace: lines(
      '    try {',
      '      this.send(eventInsert, params, (id) => {',
      '        if (id !== undefined) this.lastEventId = id;',
      '      });',
      "    } catch (error) { if (!String((error as { code?: string }).code).startsWith('SQLITE_IOERR')) throw error; }",
    ),
    expectedInvariant: 'Q18',
  },
  {
    id: 'savepoint-rollback-masks-error',
    description:
      "A savepoint undone without asking whether its transaction still exists (the original error masked by the cleanup's, as in drivers that report 'current transaction is aborted' in place of the cause): after SQLite ends a transaction on its own on a full disk, ROLLBACK TO throws 'no such savepoint' and the caller gets an untyped error instead of disk_full.",
    file: 'src/store/statements.ts',
    find: '      if (this.db.inTransaction) {',
    replace: '      if (this.db.open) {',
    expectedInvariant: 'Q18',
  },
  {
    id: 'writes-without-transaction',
    description:
      'Each statement of a write commits on its own (autocommit: the BEGIN IMMEDIATE dropped for speed, as queues that batch-tune their store do): a write that fails at a later statement, on a full disk or an I/O error, leaves its first statements committed: half-written.',
    file: 'src/store/sqlite-store.ts',
    find: '        const result = this.runner.immediate(() => runToEnd(body(this.statements, readClock()))) as T;',
    replace: '        const result = runToEnd(body(this.statements, readClock())) as T;',
    expectedInvariant: 'Q18',
  },
  {
    id: 'storage-error-fails-task',
    description:
      "A worker that reports a database it could not write to as the task's own non-retryable failure (business_error), as workers that mark a job errored on any exception from the store do: a task whose writes met a full disk or an I/O error past the retries ends failed, though nothing about the task was wrong.",
    file: 'src/worker/run.ts',
    find: "    if (error instanceof RetryableStoreError) return await run.failWith(new ToolFailure('db_busy', error.message));",
    replace: "    if (error instanceof RetryableStoreError) return await run.failWith(new ToolFailure('business_error', error.message));",
    expectedInvariant: 'Q18',
  },
  {
    id: 'storage-error-not-retried',
    description:
      "A fenced write that met a full disk or an I/O error is not retried (only SQLITE_BUSY is, as in workers that retry the lock timeout alone): the run reports db_busy at once and burns an attempt for a statement that never committed, where a retry busyWaitMs later would have gone through.",
    file: 'src/worker/run.ts',
    find: '        if (!(error instanceof RetryableStoreError) || deps.abandoning?.() === true) throw error;',
    replace: "        if (!(error instanceof RetryableStoreError) || error.code !== 'db_busy' || deps.abandoning?.() === true) throw error;",
    expectedInvariant: 'Q18',
  },
  {
    id: 'claim-storage-error-fatal',
    description:
      "The claim loop knows only the lock timeout (SQLITE_BUSY) as transient: a claim that meets a full disk or an I/O error escapes the loop and takes the worker process down (as workers that exit on ENOSPC or EIO from their queue do), where it should find nothing this time and claim again.",
    file: 'src/worker/worker.ts',
    find: '      if (!(error instanceof RetryableStoreError)) throw error;\n      // W2: the idle poll',
    replace: "      if (!(error instanceof RetryableStoreError && error.code === 'db_busy')) throw error;\n      // W2: the idle poll",
    expectedInvariant: 'Q18',
  },
  // ---------------------------------------------------------------- I15 budgets hold (issue 16)
  {
    id: 'budget-ignores-partition',
    description:
      "A limit that ignores its partition: every budget is keyed per tenant, the global ones too (a group limiter applied per group key where the limit was for the whole queue), so two tenants each take a global browser-session semaphore's full limit and more units are held at once than it allows.",
    file: 'src/queue/budgets.ts',
    find: "return (spec.scope ?? 'global') === 'tenant' ? `tenant:${task.tenant}` : '';",
    replace: 'return `tenant:${task.tenant}`;',
    expectedInvariant: 'I15',
    blindSpot: 'configuration',
  },
  // ---------------------------------------------------------------- configuration (issue 35)
  {
    id: 'lease-ratio-unchecked',
    description:
      "A lost validation rule (Q9): the lease must only outlast one heartbeat, not three, so a configuration where one late heartbeat costs the lease is accepted (as queues whose lock duration and renew interval are set independently let users pick a renew interval that races the lock). The configuration swarm only draws valid configurations, so only its probes of invalid ones see it.",
    file: 'src/queue/config.ts',
    find: '  if (config.leaseMs < 3 * config.heartbeatMs) {',
    replace: '  if (config.leaseMs < config.heartbeatMs) {',
    expectedInvariant: 'config',
    blindSpot: 'configuration',
  },
  {
    id: 'keeper-beats-at-lease',
    description:
      "A lock renewed at the lock's own duration: the worker's heartbeat defaults to leaseMs instead of heartbeatMs (a renew interval equal to the lock TTL, so every renewal races the expiry), and healthy holders lose their leases. Fencing keeps the outcomes safe, so no safety invariant objects; Q9 does.",
    file: 'src/worker/worker.ts',
    find: "heartbeatMs: positive('heartbeatMs', options.heartbeatMs ?? config.heartbeatMs),",
    replace: "heartbeatMs: positive('heartbeatMs', options.heartbeatMs ?? config.leaseMs),",
    expectedInvariant: 'Q9',
    blindSpot: 'configuration',
  },
  {
    id: 'tenant-scope-collapsed',
    description:
      "A per-key limiter whose key was dropped: a budget of scope tenant is keyed as one global bucket (as group rate limits that ignore the group key behave), so a tenant that floods drains the one bucket every tenant shares and the others wait rate_limited on a bucket that should be their own; the stored levels no longer match each tenant's own grants (scenario tenant-scoped-budgets).",
    file: 'src/queue/budgets.ts',
    find: "return (spec.scope ?? 'global') === 'tenant' ? `tenant:${task.tenant}` : '';",
    replace: "return spec.kind === 'concurrency' && (spec.scope ?? 'global') === 'tenant' ? `tenant:${task.tenant}` : '';",
    expectedInvariant: 'I15',
    blindSpot: 'configuration',
  },
  {
    id: 'session-total-per-run',
    description:
      "A conversation's total keyed by the job instead of the conversation: a total of per 'session' is counted per run, so every new version (and every retry of another task of the topic) starts from zero and a conversation uses more model calls than its session total allows (scenario tenant-scoped-budgets).",
    file: 'src/queue/budgets.ts',
    find: "if (spec.kind === 'total') return spec.per === 'run' ? `run:${task.id}` : `session:${task.tenant}\\u001f${task.topic}`;",
    replace: "if (spec.kind === 'total') return `run:${task.id}`;",
    expectedInvariant: 'I15',
    blindSpot: 'configuration',
  },
  {
    id: 'token-charged-per-attempt',
    description:
      'A token charged per claim attempt instead of per grant: a claim that finds the bucket short still takes the units it asked for (the limiter decrements before it decides), so a waiting task drains the bucket every poll and the level no longer matches what was granted.',
    file: 'src/queue/budgets.ts',
    find: lines(
      '      if (scaled < units * spec.periodMs) {',
      '        const retryAt = rateRetryAt(spec, scaled, since, units);',
    ),
    replace: lines(
      '      if (scaled < units * spec.periodMs) {',
      '        yield* tx.budgetLevelPut(budget, scope, scaled - units * spec.periodMs, since);',
      '        const retryAt = rateRetryAt(spec, scaled, since, units);',
    ),
    expectedInvariant: 'I15',
  },
  {
    id: 'bucket-refilled-on-reopen',
    description:
      "A bucket refilled on reopen: opening the database forgets when each bucket was last written (its refill clock restarts from zero, as a limiter whose state lives in memory starts full), so a restart grants a full bucket however little time passed.",
    file: 'src/store/migrations.ts',
    find: '  }).immediate();\n  return (appliedVersion.get() as { v: number }).v;',
    replace: "  }).immediate();\n  db.exec('UPDATE budget_levels SET updated_at = 0');\n  return (appliedVersion.get() as { v: number }).v;",
    expectedInvariant: 'I15',
    blindSpot: 'path',
  },
  {
    id: 'float-refill-rounded',
    description:
      'Floating-point refill rounded at every touch: the refill is computed in whole units as elapsed / period x refill and rounded, so a bucket touched often gains a part of a unit it never earned each time, and over a window it grants more than capacity + refill x d / period.',
    file: 'src/queue/budgets.ts',
    find: '  return { scaled: Math.min(full, row.level + bounded * spec.refill), since: Math.max(row.updated_at, at) };',
    replace: '  return { scaled: Math.min(full, row.level + Math.ceil((bounded / spec.periodMs) * spec.refill) * spec.periodMs), since: Math.max(row.updated_at, at) };',
    expectedInvariant: 'I15',
  },

  // ---------------------------------------------------------------- I16 reservations balance (issue 16)
  {
    id: 'reservation-released-twice',
    description:
      'Reservations released twice: the release does not check that the row is still held (no released IS NULL), so every later end of an attempt of the task gives back the units of the earlier attempts again, and the budget holds more than it was ever given.',
    file: 'src/store/sql/budgets.ts',
    find: "  'SELECT * FROM reservations WHERE task_id = :task_id AND released IS NULL ORDER BY generation, budget',",
    replace: "  'SELECT * FROM reservations WHERE task_id = :task_id ORDER BY generation, budget',",
    also: [
      {
        file: 'src/store/sql/budgets.ts',
        find: lines(
          '  `UPDATE reservations SET released = :released, consumed = :consumed, released_at = :released_at',
          '   WHERE task_id = :task_id AND generation = :generation AND budget = :budget AND released IS NULL`,',
        ),
        replace: lines(
          '  `UPDATE reservations SET released = :released, consumed = :consumed, released_at = :released_at',
          '   WHERE task_id = :task_id AND generation = :generation AND budget = :budget`,',
        ),
      },
    ],
    expectedInvariant: 'I16',
    blindSpot: 'path',
  },
  {
    id: 'reservation-never-released-by-operator',
    description:
      "Reservations released only by the run's own end: a slot freed by someone else (confirmStopped, the reconciler) keeps the task's units, so after a crash the browser sessions it held are never given back and the budget leaks until nothing can run.",
    file: 'src/queue/transition.ts',
    find: "  const units = edge.slot === 'free' && hasBudgets(context) ? yield* releaseReservations(context.config, tx, row.id, at) : undefined;",
    replace: "  const units = edge.slot === 'free' && request.by === 'holder' && hasBudgets(context) ? yield* releaseReservations(context.config, tx, row.id, at) : undefined;",
    expectedInvariant: 'I16',
    blindSpot: 'path',
  },
  {
    id: 'reservations-window-of-one',
    description:
      "Held units read over a positional window: the release reads the task's reservations with LIMIT 1, so a task that needs two budgets gives back the first and keeps the other for ever.",
    file: 'src/store/sql/budgets.ts',
    find: "  'SELECT * FROM reservations WHERE task_id = :task_id AND released IS NULL ORDER BY generation, budget',",
    replace: "  'SELECT * FROM reservations WHERE task_id = :task_id AND released IS NULL ORDER BY generation, budget LIMIT 1',",
    expectedInvariant: 'I16',
  },

  // ---------------------------------------------------------------- I17 a paused tenant gets no lease (issue 16)
  {
    id: 'pause-skips-requeued',
    description:
      "Pause not applied to requeued tasks: the claim holds back only a paused tenant's tasks that never ran, so a retry coming out of its backoff, or a task confirmed stopped, is leased while the tenant is paused.",
    file: 'src/queue/claim.ts',
    find: '  for (const row of paused) blocked.add(row.tenant);',
    replace: '  const pausedNow = new Set(paused.map((row) => row.tenant));',
    also: [
      {
        file: 'src/queue/claim.ts',
        find: '    if (yield* retireIfUnclaimable(context, tx, candidate, at)) continue;',
        replace: lines(
          '    if (pausedNow.has(candidate.tenant) && candidate.attempts === 0) {',
          '      blocked.add(candidate.tenant);',
          '      continue;',
          '    }',
          '    if (yield* retireIfUnclaimable(context, tx, candidate, at)) continue;',
        ),
      },
    ],
    expectedInvariant: 'I17',
    blindSpot: 'path',
  },

  // ---------------------------------------------------------------- I20 admission is explicit (issue 16)
  {
    id: 'critical-rejected-when-full',
    description:
      'Critical work refused for capacity: the admission rule treats every task as ordinary once the in-flight budget is full (the priority class is read after the capacity check), so a payment alert is dropped with over_capacity instead of waiting in its headroom.',
    file: 'src/queue/admission.ts',
    find: "    if (!task.critical) return { action: 'REJECT', reason: 'over_capacity' };",
    replace: "    return { action: 'REJECT', reason: 'over_capacity' };",
    also: [
      {
        file: 'src/queue/admission.ts',
        find: lines(
          '    request.task.critical &&',
          "    (decision.reason === 'over_capacity' || decision.reason === 'capacity') &&",
        ),
        replace: lines(
          '    request.task.critical &&',
          "    decision.reason === 'capacity' &&",
        ),
      },
    ],
    expectedInvariant: 'I20',
  },
  // ---------------------------------------------------------------- I18 one run per session (issue 17)
  {
    id: 'newer-version-cancels-running-only',
    description:
      "Cancel-in-progress that looks only at running work (as concurrency groups that cancel the in-progress run but not one whose worker stopped answering): a newer version persists a cancel of the session's running task, not of an uncertain one, so when the frozen older run's stop is confirmed it goes back to ready and runs again after the newer version (scenario session-cancel-uncertain; issue 35 found this class only late).",
    file: 'src/store/sql/claim.ts',
    find: '  `SELECT id, state FROM tasks WHERE tenant = :tenant AND topic = :topic AND version < :version AND ${OCCUPYING} ORDER BY id`,',
    replace: "  `SELECT id, state FROM tasks WHERE tenant = :tenant AND topic = :topic AND version < :version AND state = 'running' ORDER BY id`,",
    expectedInvariant: 'I18',
    blindSpot: 'path',
  },
  {
    id: 'session-ignores-uncertain',
    description:
      "A session check that ignores uncertain: the claim asks only whether the session has a running task, so a newer version starts while the older one's lease has lapsed and its worker (frozen, not dead) may still write: two runs of one conversation at once (seed 003's older run overwriting the newer).",
    file: 'src/store/sql/claim.ts',
    find: "  `SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND ${OCCUPYING} AND id <> :except_id LIMIT 1`,",
    replace: "  `SELECT 1 FROM tasks WHERE tenant = :tenant AND topic = :topic AND state = 'running' AND id <> :except_id LIMIT 1`,",
    expectedInvariant: 'I18',
    blindSpot: 'path',
  },
  {
    id: 'versions-started-out-of-order',
    description:
      'Versions started out of order: a version older than one already queued is stored ready instead of superseded (the late arrival is taken as new work), so it runs after the newer version of its conversation started.',
    file: 'src/queue/enqueue.ts',
    find: '  if (latest !== null && latest > task.version) {',
    replace: '  if (latest !== null && latest > task.version + 1_000_000) {',
    expectedInvariant: 'I18',
    blindSpot: 'workload',
  },

  // ---------------------------------------------------------------- I22 signals are true (issue 17)
  {
    id: 'signals-stale-depth-cache',
    description:
      "A signal computed from a stale cache: signals() memoises the queue depth per queue and refreshes it only once a minute of the queue's clock (to spare the ready index a scan per scrape), so a dashboard polled every few seconds shows work that was claimed long ago, and misses work that arrived since.",
    file: 'src/queue/signals.ts',
    find: '  const depth = (yield* tx.taskReadyDepth()).map((row) => ({ tenant: row.tenant, priority: row.priority, n: row.n }));',
    replace: lines(
      '  const cached = (context as unknown as { depthCache?: { at: number; depth: Signals["depth"] } }).depthCache;',
      '  const depth = cached !== undefined && at - cached.at < 60_000 ? cached.depth : (yield* tx.taskReadyDepth()).map((row) => ({ tenant: row.tenant, priority: row.priority, n: row.n }));',
      '  if (cached === undefined || at - cached.at >= 60_000) (context as unknown as { depthCache?: { at: number; depth: Signals["depth"] } }).depthCache = { at, depth };',
    ),
    expectedInvariant: 'I22',
  },
  // ---------------------------------------------------------------- I19 fair share (issue 17)
  {
    id: 'fairness-by-task-count',
    description:
      "Fairness by task count (Hatchet's and BullMQ Pro's round robin, Temporal's stride per key): each claim charges its tenant one unit and the end corrects nothing, so a tenant of 12-step tasks gets as many claims as a tenant of 1-step tasks and several times its service.",
    file: 'src/queue/fair-share.ts',
    find: "  for (const grant of grants) if (grant.spec.kind !== 'concurrency' && grant.spec.meter === 'tokens') charge += grant.units;",
    replace: '  charge = 1;',
    also: [{ file: 'src/queue/fair-share.ts', find: '  const delta = used - charged;', replace: '  const delta = 0 * (used - charged);' }],
    expectedInvariant: 'I19',
    blindSpot: 'workload',
  },
  {
    id: 'idle-credit-not-clamped',
    description:
      'Idle credit not clamped: a tenant back from idle keeps the low service it had when it left, so it is served alone until it has caught up with everyone, starving the tenants that were there all along (a virtual clock that does not move a returning flow to the system virtual time).',
    file: 'src/queue/fair-share.ts',
    find: '  if (yield* tx.tenantHasLive(tenant, taskId)) return undefined;',
    replace: '  if (taskId > 0 || (yield* tx.tenantHasLive(tenant, taskId))) return undefined;',
    expectedInvariant: 'I19',
    blindSpot: 'workload',
  },
  // Issue 18 (A7): the tool-call graph inside a step, drawn from how DAG runners and agent frameworks
  // broke: readiness judged on "started" instead of "succeeded", lanes keyed on the tool instead of
  // the resource, dependents released when a dependency merely finished, a scheduler that waits for a
  // ready call that can never come, a takeover that trusts the tool's own idempotency over the ledger.
  {
    id: 'graph-dependency-ignored',
    description:
      'A dependency counted as met once it has started, not once it succeeded: T3 (the ticket update) starts while T1 and T2 are still reading, on data it has not seen (a DAG runner that marks a node ready when its parents are scheduled).',
    file: 'src/worker/tool-graph.ts',
    find: "      if (!dependencies.every((s) => s === 'ok')) continue;",
    replace: "      if (dependencies.some((s) => s === 'pending')) continue;",
    expectedInvariant: 'I21',
  },
  {
    id: 'graph-resource-lane-dropped',
    description:
      'No lane for writes: every write whose dependencies are met starts at once, so two writes to one resource overlap (two updates of one ticket race, the later one written first).',
    file: 'src/worker/tool-graph.ts',
    find: "      if (!options.readOnly(call) && calls.slice(0, index).some((earlier) => !options.readOnly(earlier) && laneOf(earlier) === laneOf(call) && ['pending', 'running'].includes(state.get(earlier.id)!))) continue;",
    replace: '      // (writes of one resource no longer wait for each other)',
    expectedInvariant: 'I21',
  },
  {
    id: 'graph-lane-by-tool',
    description:
      'Write lanes keyed on the tool instead of the resource: two different tools writing one resource (a refund and a confirmation of one order) run at once, while writes of one tool to different resources wait for each other.',
    file: 'src/worker/tool-graph.ts',
    find: '  return call.resource ?? `tool:${call.tool}`;',
    replace: '  return `tool:${call.tool}`;',
    expectedInvariant: 'I21',
    blindSpot: 'workload',
  },
  {
    id: 'graph-dependents-of-failure-run',
    description:
      'Dependents released when a dependency finished, whatever its outcome: the e-mail announcing the ticket update is sent although the update failed (seed 003: "never send the e-mail that announces an update that failed").',
    file: 'src/worker/tool-graph.ts',
    find: "      if (dependencies.some((s) => s === 'failed' || s === 'skipped')) {",
    replace: "      if (dependencies.some((s) => s === 'skipped')) {",
    also: [{ file: 'src/worker/tool-graph.ts', find: "      if (!dependencies.every((s) => s === 'ok')) continue;", replace: "      if (!dependencies.every((s) => s === 'ok' || s === 'failed')) continue;" }],
    expectedInvariant: 'I21',
  },
  {
    id: 'graph-cycle-hangs',
    description:
      'No cycle check, and a scheduler that waits for something to finish when nothing is ready: a plan whose calls depend on each other waits forever, its worker slot held and its lease renewed, instead of failing invalid_plan.',
    file: 'src/worker/tool-graph.ts',
    find: "  if (waiting.size > 0) return `the calls ${[...waiting.keys()].join(', ')} depend on each other in a cycle`;",
    replace: '',
    also: [{ file: 'src/worker/tool-graph.ts', find: '    if (running.size === 0 && !progressed) break;', replace: "    if (running.size === 0 && !progressed && ![...state.values()].includes('pending')) break;" }],
    expectedInvariant: 'I11',
  },
  {
    id: 'graph-resume-without-ledger',
    description:
      'A takeover that re-runs a graph step sends its writes again without asking the ledger, trusting the external system to deduplicate by key: a ticket update the first attempt had finished and recorded is sent again.',
    file: 'src/worker/run.ts',
    find: '    const recorded = await this.retryBusy(`effect lookup ${call.tool}`, () => deps.queue.effectResult(context.requestKey));',
    replace: '    const recorded = context.graph !== undefined && task.generation > 1 ? undefined : await this.retryBusy(`effect lookup ${call.tool}`, () => deps.queue.effectResult(context.requestKey));',
    expectedInvariant: 'I8',
    blindSpot: 'window',
  },
  {
    id: 'idle-clamp-ready-only',
    description:
      'Idle clamp against backlogged tenants only (issue 31): a tenant back from idle is compared only with tenants that have ready work, so when the tenant it competes with is being served but has nothing ready at that instant, it keeps its old low service and takes every claim until it has caught up.',
    file: 'src/queue/fair-share.ts',
    find: '  for (const row of yield* tx.taskOccupiedByTenant()) active.add(row.tenant);',
    replace: '  // (tenants being served with nothing ready are not counted)',
    expectedInvariant: 'I19',
    blindSpot: 'judge',
  },
  {
    id: 'tenant-limit-inherited',
    description:
      "A tenant's limit read as a plain property (issue 31): for a tenant named constructor or toString the lookup finds Object.prototype's function, no count is ever at or above it, so stuckWhileCapacityNormal fires for a tenant held at its own limit.",
    file: 'src/queue/config.ts',
    find: '  return Object.hasOwn(config.tenantLimits, tenant) ? (config.tenantLimits[tenant] as number) : config.perTenantLimit;',
    replace: '  return config.tenantLimits[tenant] ?? config.perTenantLimit;',
    expectedInvariant: 'I22',
    blindSpot: 'configuration',
  },
  // ---------------------------------------------------------------- W1 wake-ups (issue 31)
  {
    id: 'idle-wait-unbounded',
    description:
      'An idle worker that waits for a notice and never polls (workers that trust LISTEN/NOTIFY alone): a notice lost on the way, as when the LISTEN connection was down at the commit, strands the task until some other commit happens to wake a worker.',
    file: 'src/worker/worker.ts',
    find: '    if (this.counter === undefined) return this.wakeup.wait(waiter, pollMs);',
    replace: '    if (this.counter === undefined) return this.wakeup.wait(waiter);',
    expectedInvariant: 'I11',
    blindSpot: 'window',
  },
  {
    id: 'no-notice-on-enqueue',
    description:
      'An enqueue that sends no notice (a queue that notifies only on retries and releases): an idle fleet finds new work only at its next poll, seconds after it arrived, instead of at once.',
    file: 'src/queue/enqueue.ts',
    find: "  if (!paused && decision.action !== 'DEFER') tx.txMarkClaimable();",
    replace: '',
    expectedInvariant: 'I11',
    blindSpot: 'configuration',
  },
  {
    id: 'sleep-after-run',
    description:
      'A worker that is not woken when a run ends (the fixed sleep between claims the fleet met in real use, issue 31): with every slot taken it waits for the next notice instead of claiming the moment its slot frees, so a backlog drains one notice at a time.',
    file: 'src/worker/worker.ts',
    find: '        // W1: the slot is free now; the claim loop claims again at once.\n        this.wakeup.wake();\n',
    replace: '',
    expectedInvariant: 'I11',
    blindSpot: 'configuration',
  },
  // ---------------------------------------------------------------- deadlines inside the tool phase, graph re-runs (issue 35)
  {
    id: 'effect-deadline-not-rechecked',
    description:
      "A deadline checked before a write's preparations but not again right before its effect (as job runners that check a job's expiry when they fetch it and trust it through slow setup, and as this worker once did: a calibration seed found the heartbeat before an effect answered after the deadline): a deadline that passes during the ledger lookup or the fenced heartbeat lets the effect go out for a task that ends expired (Q14, A8). Only a deadline that falls inside those awaits shows it (scenario deadline-tool-phase, expire-at).",
    file: 'src/worker/run.ts',
    find: '    this.assertBeforeDeadline(`before effect ${call.tool}`);\n',
    replace: '',
    expectedInvariant: 'I8',
    blindSpot: 'window',
  },
  {
    id: 'deadline-checked-for-writes-only',
    description:
      "Expiry enforced for side effects only, reads judged harmless (a 'skip expired jobs' guard put around mutating calls only): past its deadline a run keeps starting read tools, spending quota and holding a slot for a customer who stopped waiting, though Q14 and A8 promise expiry before each tool call. Only a deadline that passes before a step of reads shows it (deadline-tool-phase's R).",
    file: 'src/worker/run.ts',
    find: '    this.assertBeforeDeadline(`before tool ${call.tool}`);\n',
    replace: '    if (!tool.readOnly) this.assertBeforeDeadline(`before tool ${call.tool}`);\n',
    expectedInvariant: 'I8',
    blindSpot: 'window',
  },
  {
    id: 'graph-recorded-write-needs-its-dependencies',
    description:
      "A re-run of a tool graph after a takeover settles a write the ledger already holds only when it has no dependencies (memoised step results replayed only on the branch the re-run takes, as durable-execution SDKs that key a step's memo by the path that reached it): when a dependency that succeeded the first time fails now, the update that really happened is recorded skipped, and the run reports a ticket update as never made (A7 with R2). Only a takeover from checkpoint A whose re-run diverges from the first run shows it.",
    file: 'src/worker/tool-graph.ts',
    find: '      if (options.recorded?.has(call.id) === true && stopError === undefined) {',
    replace: '      if (options.recorded?.has(call.id) === true && stopError === undefined && (call.dependsOn ?? []).length === 0) {',
    expectedInvariant: 'I8',
    blindSpot: 'path',
  },
  {
    id: 'reserve-scope-lost',
    description:
      "A further reservation planned without the task's tenant (a partition key lost on the continuation path, as rate limiters that key the first acquire by group but a renewal or a second acquire by the queue): every run's later model calls draw a tenant-scoped bucket's one shared row instead of their own tenant's, so one tenant's flood starves the others' runs mid-way and the stored levels no longer match each tenant's own grants (A1). Only tenant-scoped metered budgets on the path of a further reservation show it (tenant-scoped-budgets, and config-swarm's drawn budgets).",
    file: 'src/queue/admission-api.ts',
    find: '  const plan = yield* planGrants(context.config, tx, task, needs, at);',
    replace: "  const plan = yield* planGrants(context.config, tx, { ...task, tenant: '' }, needs, at);",
    expectedInvariant: 'I15',
    blindSpot: 'configuration',
  },
  // ---------------------------------------------------------------- R8 graceful shutdown (faults/drain.ts, graceful-drain)
  {
    id: 'interrupt-by-task-id',
    description:
      "A hand-back keyed by task id alone (a shutdown hook that re-queues by id whatever the process thinks it holds, not fenced by its worker and generation): a worker frozen past its lease, whose runs the reconciler re-queued and other workers took over, drains on waking and hands back the new holder's run. Without graceful-drain no interrupt ever ran and this went unseen; with it the gate goes red within its first few seeds (index 0 and 5 at two root seeds), by the core's own second guard (the holder write's row check throws InvariantError, a crash of the drain) before I2 sees the foreign event.",
    file: 'src/runs/interrupt.ts',
    find: '  if (!holdsLease(row, who.workerId, who.generation, at)) return STALE_LEASE;',
    replace: '  if (!holdsLease(row, row?.worker_id ?? who.workerId, row?.generation ?? who.generation, at)) return STALE_LEASE;',
    expectedInvariant: 'I2',
    blindSpot: 'window',
  },
];

/** Where `find` occurs in `text`: every start index (overlapping occurrences included). */
export function occurrences(text: string, find: string): number[] {
  const found: number[] = [];
  if (find === '') return found;
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + 1)) found.push(at);
  return found;
}

/**
 * Applies a sabotage to the text of its file. Throws unless `find` occurs exactly once: a sabotage that
 * no longer matches must fail loudly, never count as caught.
 */
export function applySabotage(text: string, sabotage: Pick<Sabotage, 'id' | 'file' | 'find' | 'replace'>): string {
  const found = occurrences(text, sabotage.find);
  if (found.length !== 1) {
    throw new StaleSabotageError(sabotage.id, sabotage.file, found.length);
  }
  const at = found[0]!;
  return text.slice(0, at) + sabotage.replace + text.slice(at + sabotage.find.length);
}

/**
 * Every file a sabotage changes, with its text once all of the sabotage's edits are applied in order
 * (`read` gives a file's text before the sabotage). Throws StaleSabotageError when one edit's find text
 * does not occur exactly once in the text the edits before it left.
 */
export function plantedTexts(sabotage: Pick<Sabotage, 'id' | 'file' | 'find' | 'replace' | 'also'>, read: (file: string) => string): Map<string, string> {
  const texts = new Map<string, string>();
  for (const edit of [sabotage, ...(sabotage.also ?? [])]) {
    const text = texts.get(edit.file) ?? read(edit.file);
    texts.set(edit.file, applySabotage(text, { id: sabotage.id, file: edit.file, find: edit.find, replace: edit.replace }));
  }
  return texts;
}

export class StaleSabotageError extends Error {
  constructor(
    readonly sabotageId: string,
    readonly file: string,
    readonly matches: number,
  ) {
    super(`sabotage ${sabotageId}: its find text occurs ${matches} times in ${file}, expected exactly once (src/ changed: update the catalogue)`);
    this.name = 'StaleSabotageError';
  }
}
