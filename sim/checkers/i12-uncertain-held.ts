import type { WorldResult } from '../world.ts';
import { analyse, evAt, incarnationStateAt, incarnationStates, rolledBack, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** Sources that must never free an uncertain slot (Q11): they run inside the task. */
const UNTRUSTED_SOURCES = /^(model|tool)\b/i;

/**
 * I12: uncertain is held: nothing leaves uncertain without a confirmation or a reconciliation
 * decision; no paused worker is confirmed stopped.
 *
 * Rules:
 * - every transition out of `uncertain` is a `stop_confirmed` event from a trusted source, or a
 *   `reconciled` decision of the reconciler, and the latter only under reconciliation 'auto' (under
 *   'hold' only a confirmation frees it);
 * - every `stop_confirmed` event answers a successful confirmStopped in the history for that task and
 *   generation, made by the execution layer (not a worker incarnation), placed at it by the cursors;
 * - no confirmStopped succeeded while the holder incarnation of that generation was paused (from the
 *   history's start, pause, resume and kill notes), unless that holder had already stopped the run: the
 *   confirmation was asked for while it was not paused, after one of its calls for that task and
 *   generation was refused stale_lease (R9: the run stops at once, which I2 holds it to). A process
 *   paused after it stopped a run cannot resume that run;
 * - a lapsed lease makes the task uncertain (its lease_expired event goes to uncertain), never ready;
 * - a stop_confirmed event confirms the generation the task is at (its last claim's): a late
 *   confirmation of an older generation must not free a newer one, whose worker may be alive;
 * - a pending cancel is never dropped (Q13): a cancel answered `cancel_requested` left its event, and
 *   once a task's cancel was requested nothing moves it back to ready (a confirmation or a
 *   reconciliation of an uncertain task with a pending cancel ends it cancelled).
 */
export const i12UncertainHeld: Checker = {
  invariant: 'I12',
  kind: 'safety',
  description: 'uncertain is held: only a trusted confirmation or reconciliation frees it; never for a paused worker',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I12', 'safety');
    const confirmations = new Map<string, { index: number; before: number; ev: number; actor: string }[]>();
    const lives = incarnationStates(world);
    const workers = new Set(lives.keys());
    const holders = new Map<string, string>();
    for (const event of world.events) {
      if (event.type === 'claimed') holders.set(`${event.taskId}:${String(event.data.generation)}`, String(event.data.workerId));
    }
    /** (task:generation:incarnation) -> the first history index at which a call of that run was refused stale_lease. */
    const stoppedAt = new Map<string, number>();
    for (const entry of world.history.entries()) {
      if (entry.type !== 'fail' || entry.reason !== 'stale_lease' || entry.taskId === undefined) continue;
      const run = `${entry.taskId}:${String(entry.generation)}:${entry.actor}`;
      if (!stoppedAt.has(run)) stoppedAt.set(run, entry.index);
    }
    /** Whether `holder` had stopped the run `key` (task:generation) before a confirmation asked at `invokeIndex`, while it was not paused. */
    const stoppedBefore = (key: string, holder: string, invokeIndex: number) =>
      (stoppedAt.get(`${key}:${holder}`) ?? Number.MAX_SAFE_INTEGER) < invokeIndex && incarnationStateAt(lives, holder, invokeIndex) !== 'paused';
    for (const entry of world.history.entries()) {
      if (entry.type !== 'ok' || entry.op !== 'confirmStopped' || entry.taskId === undefined || rolledBack(analysis, entry)) continue;
      const key = `${entry.taskId}:${String(entry.generation)}`;
      let list = confirmations.get(key);
      if (list === undefined) confirmations.set(key, (list = []));
      list.push({ index: entry.index, before: analysis.cursorBefore[entry.invokeIndex] ?? 0, ev: evAt(analysis, entry) ?? Number.MAX_SAFE_INTEGER, actor: entry.actor });
      const holder = holders.get(key);
      if (workers.has(entry.actor)) out.add('untrusted', `task ${entry.taskId} confirmed stopped by worker ${entry.actor}`, { at: [entry.index], taskId: entry.taskId });
      if (holder !== undefined && incarnationStateAt(lives, holder, entry.index) === 'paused' && !stoppedBefore(key, holder, entry.invokeIndex)) {
        out.add('paused', `task ${entry.taskId} g${String(entry.generation)} confirmed stopped while its holder ${holder} was paused`, { at: [entry.index], taskId: entry.taskId });
      }
    }
    const generationNow = new Map<number, number>();
    const cancelPending = new Map<number, number>();
    world.events.forEach((event, position) => {
      if (event.type === 'claimed') generationNow.set(event.taskId, Number(event.data.generation));
      if (event.type === 'cancel_requested' && !cancelPending.has(event.taskId)) cancelPending.set(event.taskId, event.id);
      const pending = cancelPending.get(event.taskId);
      if (pending !== undefined && event.id !== pending && analysis.stateAfter[position] === 'ready' && analysis.stateBefore[position] !== 'ready') {
        out.add(
          'cancel',
          `task ${event.taskId}: ${event.type} event ${event.id} moved it ${String(analysis.stateBefore[position])} -> ready though cancel was requested (event ${pending}): a pending cancel ends the run cancelled (Q13)`,
          { taskId: event.taskId },
        );
      }
      if (event.type === 'lease_expired' && event.data.to !== 'uncertain') {
        out.add('expiry', `task ${event.taskId}: lease_expired event ${event.id} moved it to ${String(event.data.to)}, not uncertain: a lapsed lease is held until a confirmation (Q10)`, { taskId: event.taskId });
      }
      if (event.type === 'stop_confirmed' && event.data.generation !== generationNow.get(event.taskId)) {
        out.add(
          'stale generation',
          `task ${event.taskId}: stop_confirmed event ${event.id} confirms generation ${String(event.data.generation)} while the task is at generation ${String(generationNow.get(event.taskId))}`,
          { taskId: event.taskId },
        );
      }
      if (analysis.stateBefore[position] !== 'uncertain' || analysis.stateAfter[position] === 'uncertain') return;
      if (event.type === 'reconciled') {
        if (analysis.config.reconciliation !== 'auto') out.add('reconciled', `task ${event.taskId} left uncertain by reconciliation under policy ${analysis.config.reconciliation}`, { taskId: event.taskId });
        return;
      }
      if (event.type !== 'stop_confirmed') {
        out.add('unconfirmed', `task ${event.taskId} left uncertain by ${event.type} (event ${event.id})`, { taskId: event.taskId });
        return;
      }
      const source = event.data.source;
      if (typeof source !== 'string' || UNTRUSTED_SOURCES.test(source)) out.add('untrusted', `task ${event.taskId} confirmed stopped by source ${String(source)}`, { taskId: event.taskId });
      const asked = confirmations.get(`${event.taskId}:${String(event.data.generation)}`) ?? [];
      if (!asked.some((call) => call.before < event.id && event.id <= call.ev)) {
        out.add('unconfirmed', `task ${event.taskId}: stop_confirmed event ${event.id} answers no successful confirmStopped in the history`, { taskId: event.taskId });
      }
    });
    checkCancelsRecorded(world, analysis, out);
    return out.list;
  },
};

/** Q13: a cancel the queue acknowledged as requested (the task was running or uncertain) is persisted: its event is in the log. */
function checkCancelsRecorded(world: WorldResult, analysis: ReturnType<typeof analyse>, out: ViolationList): void {
  for (const entry of world.history.entries()) {
    if (entry.type !== 'ok' || entry.op !== 'cancel' || entry.taskId === undefined || rolledBack(analysis, entry)) continue;
    if ((entry.data as { outcome?: unknown } | undefined)?.outcome !== 'cancel_requested') continue;
    const ev = evAt(analysis, entry);
    if (ev === undefined) continue;
    const before = analysis.cursorBefore[entry.invokeIndex] ?? 0;
    const events = analysis.eventsByTask.get(entry.taskId) ?? [];
    // The request is recorded now, or was already (a second cancel of the same run changes nothing).
    if (!events.some((event) => event.type === 'cancel_requested' && event.id <= ev)) {
      out.add('cancel', `task ${entry.taskId}: cancel answered cancel_requested (history ${entry.index}) but no cancel_requested event was written by event ${ev} (after ${before})`, {
        at: [entry.index],
        taskId: entry.taskId,
      });
    }
  }
}
