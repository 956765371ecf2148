import { faultFreeUsage } from '../actors/scripted-model.ts';
import type { CreditEntry, Usage } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { largestCallTokens, scriptsByTask } from './scripts.ts';
import { specIsTerminal } from './spec-rules.ts';
import { auditOf } from './tables.ts';
import { analyse, rolledBack, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** Closures the reconciler makes on its own (src/runs/reconciler.ts), with no end event of the task. */
const RECONCILER_RELEASES = new Set(['hold_ttl', 'orphaned']);
const ZERO: Usage = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };

function credits(usage: Usage, tokensPerCredit: number): number {
  return Math.ceil((usage.inputTokens + usage.outputTokens) / tokensPerCredit);
}

function sameUsage(a: Usage | null | undefined, b: Usage): boolean {
  return a !== null && a !== undefined && a.inputTokens === b.inputTokens && a.outputTokens === b.outputTokens && a.modelCalls === b.modelCalls;
}

/**
 * I7: one settlement per run: exactly one settlement or release per hold; charged = checkpointed usage;
 * within one model call of the fault-free run.
 *
 * Rules:
 * - every task has exactly one hold, of its tenant and tier, for tierHolds[tier] credits;
 * - a hold is closed at most once: at most one end event of the task says `settlement: settled` or
 *   `released`, and it agrees with the hold's final state; a hold closed with no such event was
 *   closed by the reconciler (hold_ttl, orphaned), and only then may a later end find it
 *   `already_closed`;
 * - a task that ended has a closed hold (the hold closes in the transaction of the end);
 * - charged = checkpointed usage: a closed hold charged ceil(tokens / tokensPerCredit) of the task's
 *   last checkpointed usage, or 0 if it never checkpointed; a settled hold records exactly that usage.
 *   A hold the reconciler closed (holdTtlMs, R4) is held to the usage checkpointed when it closed;
 *   the task may run again after that, and its end then finds the hold already closed;
 * - a run that ended done was charged within one model call of its script's fault-free run: model
 *   calls within +-1 of faultFreeUsage, tokens within the script's largest single call (unless the
 *   reconciler closed its hold before the end);
 * - the credit ledger (R4, table credit_ledger; when the run exports it) has exactly one row per
 *   closed hold and none for an open one: `charge` for settled, `release` for released, with the
 *   hold's tenant, charged credits and closing time.
 */
export const i7Settlement: Checker = {
  invariant: 'I7',
  kind: 'safety',
  description: 'one settlement per run, charged the checkpointed usage, within one model call of the fault-free run',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const { config } = analysis;
    const out = new ViolationList('I7', 'safety');
    const holds = new Map<number, WorldResult['holds'][number]>();
    for (const hold of world.holds) {
      if (holds.has(hold.taskId)) out.add('one hold', `task ${hold.taskId} has two holds`, { taskId: hold.taskId });
      holds.set(hold.taskId, hold);
      const task = analysis.tasks.get(hold.taskId);
      if (task === undefined) out.add('one hold', `hold for task ${hold.taskId}, which does not exist`, { taskId: hold.taskId });
      else if (hold.tenant !== task.tenant || hold.tier !== task.tier || hold.credits !== config.tierHolds[task.tier]) {
        out.add('hold', `task ${task.id} (${task.tenant}, ${task.tier}) has a hold of ${hold.credits} credits for ${hold.tenant}, ${hold.tier}`, { taskId: task.id });
      }
    }
    for (const task of analysis.tasks.values()) {
      const hold = holds.get(task.id);
      if (hold === undefined) {
        out.add('one hold', `task ${task.id} has no hold`, { taskId: task.id });
        continue;
      }
      checkClosures(analysis.eventsByTask.get(task.id) ?? [], hold, out);
      if (specIsTerminal(task.state) && hold.state === 'held') out.add('unsettled', `task ${task.id} ended ${task.state} but its hold is still held`, { taskId: task.id });
      if (hold.state === 'held') continue;
      // A hold the reconciler closed (holdTtlMs) charged what was checkpointed when it closed; a later
      // run of the task ends without a settlement, so only an end's own settlement is held to the final usage.
      const byReconciler = RECONCILER_RELEASES.has(hold.reason ?? '');
      const candidates = byReconciler
        ? usageAtClosure(analysis.eventsByTask.get(task.id) ?? [], hold.closedAt)
        : [world.checkpoints.get(task.id)?.usage ?? ZERO];
      const matches = (usage: Usage) =>
        hold.chargedCredits === credits(usage, config.tokensPerCredit) && (hold.state !== 'settled' || sameUsage(hold.usage, usage));
      if (!candidates.some(matches)) {
        const usage = candidates[candidates.length - 1] ?? ZERO;
        out.add(
          'charge',
          `task ${task.id}: hold ${hold.state} charging ${String(hold.chargedCredits)} credits for ${JSON.stringify(hold.usage)}, checkpointed usage ${JSON.stringify(usage)}${byReconciler ? ` when the reconciler closed it at ${String(hold.closedAt)}` : ''} is ${credits(usage, config.tokensPerCredit)} credits`,
          { taskId: task.id },
        );
      }
      if (task.state === 'done' && !byReconciler) checkFaultFree(world, task.id, hold.usage ?? ZERO, out);
    }
    checkReconcilerReleases(world, out);
    checkLedger(world, holds, out);
    return out.list;
  },
};

/**
 * The checkpointed usage a reconciler closure at `closedAt` may have charged: the last checkpoint
 * before it (none: zero), or one written in the same millisecond (the log does not order a checkpoint
 * against a reconcile pass of the same instant).
 */
function usageAtClosure(events: readonly { type: string; at: number; data: Record<string, unknown> }[], closedAt: number | null): Usage[] {
  if (closedAt === null) return [];
  let before: Usage = ZERO;
  const sameInstant: Usage[] = [];
  for (const event of events) {
    if (event.type !== 'checkpoint' || !isUsage(event.data.usage)) continue;
    if (event.at < closedAt) before = event.data.usage;
    else if (event.at === closedAt) sameInstant.push(event.data.usage);
  }
  return [before, ...sameInstant];
}

function isUsage(value: unknown): value is Usage {
  const usage = value as Partial<Usage> | null;
  return typeof usage === 'object' && usage !== null && typeof usage.inputTokens === 'number' && typeof usage.outputTokens === 'number' && typeof usage.modelCalls === 'number';
}

function checkClosures(events: readonly { id: number; type: string; data: Record<string, unknown> }[], hold: WorldResult['holds'][number], out: ViolationList): void {
  const closing = events.filter((event) => event.data.settlement === 'settled' || event.data.settlement === 'released');
  const byReconciler = RECONCILER_RELEASES.has(hold.reason ?? '');
  if (closing.length > 1) out.add('twice', `task ${hold.taskId}: hold closed by ${closing.length} events (${closing.map((e) => e.id).join(', ')})`, { taskId: hold.taskId });
  const first = closing[0];
  if (first !== undefined && first.data.settlement !== hold.state) {
    out.add('twice', `task ${hold.taskId}: event ${first.id} says ${String(first.data.settlement)} but the hold is ${hold.state}`, { taskId: hold.taskId });
  }
  if (first !== undefined && byReconciler) out.add('twice', `task ${hold.taskId}: hold closed by event ${first.id} and by the reconciler (${String(hold.reason)})`, { taskId: hold.taskId });
  if (first === undefined && hold.state !== 'held' && !byReconciler) {
    out.add('silent', `task ${hold.taskId}: hold ${hold.state} (${String(hold.reason)}) with no end event and not by the reconciler`, { taskId: hold.taskId });
  }
  const again = events.find((event) => event.data.settlement === 'already_closed');
  if (again !== undefined && !byReconciler) {
    out.add('twice', `task ${hold.taskId}: event ${again.id} found the hold already closed, which only a reconciler release may do`, { taskId: hold.taskId });
  }
}

/**
 * A reconciler release stays the hold's one closure: the holds whose final reason is a reconciler's
 * (hold_ttl, orphaned) are at least as many as the releases the reconcile passes reported in the
 * history. Fewer means a later end closed a released hold again and overwrote it (the hold's final
 * row alone cannot show that). A pass whose answer was not recorded (its caller died mid-call) counts
 * nothing, so the rule only errs towards silence.
 */
function checkReconcilerReleases(world: WorldResult, out: ViolationList): void {
  let reported = 0;
  let lastPass: number | undefined;
  const analysis = analyse(world);
  for (const entry of world.history.entries()) {
    if (entry.type !== 'ok' || entry.op !== 'reconcile' || rolledBack(analysis, entry)) continue;
    const released = (entry.data as { releasedHolds?: unknown } | undefined)?.releasedHolds;
    if (typeof released === 'number' && released > 0) {
      reported += released;
      lastPass = entry.index;
    }
  }
  const kept = world.holds.filter((hold) => hold.state !== 'held' && RECONCILER_RELEASES.has(hold.reason ?? '')).length;
  if (kept < reported) {
    out.add(
      'twice',
      `reconcile passes released ${reported} holds (the last at history entry ${String(lastPass)}) but only ${kept} holds end closed by the reconciler: a later end closed a released hold again`,
    );
  }
}

function checkLedger(world: WorldResult, holds: ReadonlyMap<number, WorldResult['holds'][number]>, out: ViolationList): void {
  const ledger = auditOf(world).creditLedger;
  if (ledger === undefined) return;
  const rows = new Map<number, CreditEntry[]>();
  for (const row of ledger) {
    const list = rows.get(row.taskId) ?? [];
    list.push(row);
    rows.set(row.taskId, list);
    if (!holds.has(row.taskId)) out.add('ledger', `credit ledger ${row.kind} of ${row.credits} credits for task ${row.taskId}, which has no hold`, { taskId: row.taskId });
  }
  for (const hold of holds.values()) {
    const entries = rows.get(hold.taskId) ?? [];
    if (hold.state === 'held') {
      if (entries.length > 0) out.add('ledger', `task ${hold.taskId}: hold still held but the ledger has ${entries.length} row(s)`, { taskId: hold.taskId });
      continue;
    }
    if (entries.length !== 1) {
      out.add('ledger', `task ${hold.taskId}: hold ${hold.state} has ${entries.length} ledger rows, not one`, { taskId: hold.taskId });
      continue;
    }
    const entry = entries[0]!;
    const kind = hold.state === 'settled' ? 'charge' : 'release';
    if (entry.kind !== kind || entry.credits !== hold.chargedCredits || entry.tenant !== hold.tenant || entry.at !== hold.closedAt) {
      out.add(
        'ledger',
        `task ${hold.taskId}: hold ${hold.state} (${hold.tenant}, ${String(hold.chargedCredits)} credits at ${String(hold.closedAt)}) but its ledger row is ${entry.kind} (${entry.tenant}, ${entry.credits} credits at ${entry.at})`,
        { taskId: hold.taskId },
      );
    }
  }
}

function checkFaultFree(world: WorldResult, taskId: number, usage: Usage, out: ViolationList): void {
  const script = scriptsByTask(world).get(taskId);
  // A task with no script, a team's agent module's (T2), has no fault-free usage to compare with: its
  // model's usage is its own. The settlement rules above still judge what it was charged.
  if (script === undefined) return;
  const clean = faultFreeUsage(script);
  const tokens = usage.inputTokens + usage.outputTokens;
  const cleanTokens = clean.inputTokens + clean.outputTokens;
  const oneCall = largestCallTokens(script);
  if (Math.abs(usage.modelCalls - clean.modelCalls) > 1 || Math.abs(tokens - cleanTokens) > oneCall) {
    out.add(
      'fault-free',
      `task ${taskId}: done run charged ${usage.modelCalls} model calls and ${tokens} tokens; the fault-free run uses ${clean.modelCalls} and ${cleanTokens} (one call is at most ${oneCall})`,
      { taskId },
    );
  }
}

/**
 * I7 (liveness, S5): after the liveness phase drained, no hold is still held: every hold was settled
 * or released.
 */
export const i7HoldsClosed: Checker = {
  invariant: 'I7',
  kind: 'liveness',
  description: 'every hold settled or released once the run drained',
  check(world: WorldResult) {
    const out = new ViolationList('I7', 'liveness');
    if (!world.drained) return out.list;
    for (const hold of world.holds) {
      if (hold.state === 'held') out.add('open hold', `task ${hold.taskId}: hold still held after the run drained`, { taskId: hold.taskId });
    }
    return out.list;
  },
};
