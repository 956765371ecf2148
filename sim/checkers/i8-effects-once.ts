import type { ProviderOperation } from '../actors/provider.ts';
import type { WorldResult } from '../world.ts';
import { intendedWrites, scriptsByTask, type IntendedWrite } from './scripts.ts';
import { providerRecordMismatch } from './provider-calls.ts';
import { WRITE_TOOLS } from '../actors/tools.ts';

const WRITE_TOOL_NAMES: ReadonlySet<string> = new Set(WRITE_TOOLS);
import { analyse, ViolationList, wallTimeAt } from './timeline.ts';
import type { Checker } from './types.ts';

/**
 * I8: effects once: each request key executed at most once by the external system; each finished run
 * has exactly one effect per intended action. Checked from the outside (the provider's own record),
 * and against the effect ledger.
 *
 * Rules:
 * - the provider executed each request key at most once, and the provider's record agrees with the
 *   history's notes (one note per request, one execute note per execution);
 * - no worker sent a request key after the ledger had committed that key's result: a takeover takes
 *   the first result from the ledger (R2), it does not lean on the provider's own deduplication;
 * - no request was sent at or after its task's deadline: an expired task causes no effect (Q14); nor
 *   did any read start at or after it (the deadline is checked before each tool call, Q14 and A8);
 * - the ledger keeps each key's first record: its first effect_recorded event says repeated: false,
 *   later ones repeated: true, and the row names the generation that recorded it first (R3);
 * - judged per intended effect, not per key format: each execution names the tool call that made it,
 *   which names a write its task's script intends (R3's effect: the action and its canonical payload);
 *   one intended effect executed more than once under different keys is a duplicate the provider's
 *   deduplication could not stop, and one key sent for two different effects loses the second;
 * - a run that ended done executed every intended effect exactly once, and the ledger holds a row of
 *   its action under a key it was sent with; every ledger row of a task is a key sent for one of its
 *   intended writes, with that write's action; a write of a step whose calls form a graph (A7) is owed
 *   at most once (partial success: its call or a dependency may have failed), and exactly once, with
 *   its ledger row, when the step's recorded outcome says it succeeded;
 * - what a step records of each write matches what happened (A7 with R2): a write the ledger holds is
 *   recorded ok (not skipped or failed, even when a re-run after a takeover saw a dependency fail),
 *   and a write recorded ok was executed by the external system;
 * - an acknowledged ledger row stays (R3, and the power-loss fault, S4): every key a recordEffect was
 *   answered ok for is in the final ledger, and no worker sent that key to the provider after the
 *   acknowledgement (the provider's key deduplicates, so a lost row shows as a second request, not a
 *   second execution: the ledger must be the guard, not the provider).
 */
export const i8EffectsOnce: Checker = {
  invariant: 'I8',
  kind: 'safety',
  description: 'effects once: each request key executed at most once; done runs executed each intended write once',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I8', 'safety');
    const mismatch = providerRecordMismatch(world);
    if (mismatch !== undefined) out.add('record', mismatch);
    const executed = new Map<string, number>();
    const executedByTask = new Map<number, Set<string>>();
    for (const execution of world.provider.executions) {
      const n = (executed.get(execution.requestKey) ?? 0) + 1;
      executed.set(execution.requestKey, n);
      if (n === 2) out.add('twice', `request key ${execution.requestKey} (task ${execution.taskId}, ${execution.action}) executed more than once${twinHint(execution)}`, { taskId: execution.taskId });
      let keys = executedByTask.get(execution.taskId);
      if (keys === undefined) executedByTask.set(execution.taskId, (keys = new Set()));
      keys.add(execution.requestKey);
    }
    // R3: the ledger keeps the first result of a key; a repeat returns it and changes nothing. So the
    // first effect_recorded event of a key says repeated: false and every later one repeated: true,
    // and the ledger row still names the generation of that first record.
    const firstRecord = new Map<string, { id: number; generation: number | undefined }>();
    for (const event of world.events) {
      const key = event.type === 'effect_recorded' ? event.data.requestKey : undefined;
      if (typeof key !== 'string') continue;
      const first = firstRecord.get(key);
      const expected = first !== undefined;
      if (event.data.repeated !== expected) {
        out.add(
          'ledger',
          `task ${event.taskId}: effect_recorded event ${event.id} of ${key} says repeated: ${String(event.data.repeated)}, but it is ${expected ? `a repeat of event ${first.id}` : 'the first record of the key'}`,
          { taskId: event.taskId },
        );
      }
      if (first === undefined) firstRecord.set(key, { id: event.id, generation: event.generation });
    }
    // R2/R3: a takeover asks the ledger first; a key the ledger already held is never sent again.
    for (const request of world.provider.requests) {
      if (request.sentIndex === undefined) continue;
      const recorded = firstRecord.get(request.requestKey)?.id;
      if (recorded !== undefined && recorded <= (analysis.cursorBefore[request.sentIndex] ?? 0)) {
        out.add(
          'resent',
          `task ${request.taskId}: ${request.actor} sent ${request.requestKey} again (history ${request.sentIndex}) after the ledger had recorded its result (event ${recorded}); a takeover must take the first result from the ledger`,
          { taskId: request.taskId, at: [request.sentIndex] },
        );
      }
    }
    // Q14: past its deadline a run calls nothing more, so an expired task causes no effect. The worker
    // checks the deadline on its own clock right before each tool call, and a write is sent in that
    // instant: a request sent at or after the deadline (wall time, clock jumps included) is a breach.
    const entries = world.history.entries();
    for (const request of world.provider.requests) {
      const deadline = analysis.tasks.get(request.taskId)?.deadline;
      if (request.sentIndex === undefined || deadline === undefined) continue;
      const sentAt = wallTimeAt(analysis, entries[request.sentIndex]!);
      if (sentAt >= deadline) {
        out.add(
          'after deadline',
          `task ${request.taskId}: ${request.actor} sent ${request.action} (${request.requestKey}) at ${sentAt}, at or after the task's deadline ${deadline}: an expired task causes no effect (Q14)`,
          { taskId: request.taskId, at: [request.sentIndex] },
        );
      }
    }
    // Q14, A8: the deadline is checked before each tool call, reads too: no call starts at or after it
    // (a write's is judged by its request above). The call's wall time is its instant plus the clock's
    // skew at its place in the history.
    for (const call of world.provider.calls ?? []) {
      const deadline = analysis.tasks.get(call.taskId)?.deadline;
      if (deadline === undefined || WRITE_TOOL_NAMES.has(call.tool)) continue;
      const startedAt = call.atMs + (call.historyLength > 0 ? (analysis.skewAt[call.historyLength - 1] ?? 0) : 0);
      if (startedAt >= deadline) {
        out.add(
          'after deadline',
          `task ${call.taskId}: ${call.actor} started ${call.tool} (${call.toolCallId}) at ${startedAt}, at or after the task's deadline ${deadline}: no tool call starts past the deadline (Q14, A8)`,
          { taskId: call.taskId, ...(call.historyLength > 0 ? { at: [call.historyLength - 1] } : {}) },
        );
      }
    }
    for (const effect of world.effects ?? []) {
      const first = firstRecord.get(effect.requestKey);
      if (first !== undefined && first.generation !== undefined && effect.generation !== first.generation) {
        out.add('ledger', `task ${effect.taskId}: the ledger row of ${effect.requestKey} names generation ${effect.generation}, but generation ${first.generation} recorded it first (event ${first.id}): a repeat overwrote the first record`, {
          taskId: effect.taskId,
        });
      }
    }
    const acknowledged = new Map<string, number>();
    for (const entry of entries) {
      if (entry.type !== 'ok' || entry.op !== 'recordEffect') continue;
      // The ok entry keeps the cursor; the key is in its invoke's data (actors/gated-queue.ts).
      const key = (entries[entry.invokeIndex]?.data as { requestKey?: unknown } | undefined)?.requestKey;
      if (typeof key === 'string' && !acknowledged.has(key)) acknowledged.set(key, entry.index);
    }
    const ledgerKeys = new Set((world.effects ?? []).map((effect) => effect.requestKey));
    for (const [key, index] of acknowledged) {
      if (world.effects !== undefined && !ledgerKeys.has(key)) {
        out.add('ledger lost', `the ledger row of ${key} was acknowledged (history ${index}) but is not in the final ledger`, { at: [index] });
      }
    }
    for (const request of world.provider.requests) {
      const index = acknowledged.get(request.requestKey);
      if (request.sentIndex === undefined || index === undefined || request.sentIndex <= index) continue;
      out.add('resent', `task ${request.taskId}: ${request.actor} sent ${request.requestKey} again (history ${request.sentIndex}) after its ledger row was acknowledged (history ${index})`, {
        taskId: request.taskId,
        at: [index, request.sentIndex],
      });
    }
    // The rules below judge a task against the writes its script intends. A task of a team's agent
    // module (T2) carries no script (sim/actors/agent-world.ts), so they skip it: what its model meant
    // to write is its own; the rules above (at most once per key, never resent after the ledger
    // recorded it, nothing after the deadline, the ledger's first record kept) judge it all the same.
    const scripts = scriptsByTask(world);
    const writesOf = new Map<number, Map<string, IntendedWrite>>();
    const writes = (taskId: number): Map<string, IntendedWrite> | undefined => {
      const script = scripts.get(taskId);
      if (script === undefined) return undefined;
      let found = writesOf.get(taskId);
      if (found === undefined) writesOf.set(taskId, (found = intendedWrites(taskId, script)));
      return found;
    };
    // Each request is attributed to the intended write whose tool call made it (the external system
    // records the call): the effect's identity is R3's (task, action, payload), never the key's format.
    const attribute = (request: ProviderOperation): IntendedWrite | undefined => {
      const write = request.toolCallId === undefined ? undefined : writes(request.taskId)?.get(request.toolCallId);
      return write !== undefined && write.tool === request.action ? write : undefined;
    };
    const executionsOf = new Map<string, ProviderOperation[]>();
    for (const execution of world.provider.executions) {
      if (writes(execution.taskId) === undefined) continue;
      const write = attribute(execution);
      if (write === undefined) {
        const why = execution.toolCallId === undefined ? 'no tool call of its script made it' : `tool call ${execution.toolCallId} is no ${execution.action} its script intends`;
        out.add('unintended', `task ${execution.taskId}: executed ${execution.requestKey}, which its script never intends (${why})`, { taskId: execution.taskId });
        continue;
      }
      let list = executionsOf.get(write.effect);
      if (list === undefined) executionsOf.set(write.effect, (list = []));
      list.push(execution);
    }
    // One intended effect executed more than once under different keys: the provider's deduplication
    // could not help, since the keys differed (a key that changes across takeovers, say). The same key
    // executed twice is reported above.
    for (const list of executionsOf.values()) {
      const keys = [...new Set(list.map((execution) => execution.requestKey))];
      if (keys.length < 2) continue;
      const first = list[0]!;
      out.add(
        'twice',
        `task ${first.taskId}: one intended effect (${first.action} of tool call ${[...new Set(list.map((execution) => execution.toolCallId ?? '?'))].join(' and ')}) executed ${list.length} times, under keys ${keys.join(', ')} (${list.map((execution) => `${execution.actor}@g${execution.generation}`).join(', ')}): a repeat of an effect must carry the key of its first attempt`,
        { taskId: first.taskId },
      );
    }
    // Which intended effects each request key was sent for: a key sent for two different effects makes
    // the provider answer the second with the first's result, so the second never happens.
    const effectsOfKey = new Map<string, Map<string, { taskId: number; write: IntendedWrite }>>();
    for (const request of world.provider.requests) {
      const write = attribute(request);
      if (write === undefined) continue;
      let effects = effectsOfKey.get(request.requestKey);
      if (effects === undefined) effectsOfKey.set(request.requestKey, (effects = new Map()));
      if (!effects.has(write.effect)) effects.set(write.effect, { taskId: request.taskId, write });
      if (effects.size === 2 && !effects.has('\u0000reported')) {
        effects.set('\u0000reported', { taskId: request.taskId, write });
        const [a, b] = [...effects.values()];
        out.add('shared key', `request key ${request.requestKey} was sent for two different intended effects (task ${a!.taskId} ${a!.write.toolCallId}, task ${b!.taskId} ${b!.write.toolCallId}): the provider answers the second with the first's result and it never happens`, {
          taskId: request.taskId,
        });
      }
    }
    const ledger = new Map<number, { requestKey: string; action: string }[]>();
    for (const effect of world.effects ?? []) {
      let rows = ledger.get(effect.taskId);
      if (rows === undefined) ledger.set(effect.taskId, (rows = []));
      rows.push({ requestKey: effect.requestKey, action: effect.action });
      if (writes(effect.taskId) === undefined) continue;
      const sentFor = [...(effectsOfKey.get(effect.requestKey)?.values() ?? [])];
      if (!sentFor.some(({ taskId, write }) => taskId === effect.taskId && write.tool === effect.action)) {
        out.add('unintended', `task ${effect.taskId}: ledger holds ${effect.requestKey} (${effect.action}), which no request for a write its script intends carried`, { taskId: effect.taskId });
      }
    }
    // A7 with R2: what a step records of each write (ok, skipped, failed) is what happened. A write the
    // ledger holds happened, whatever its dependencies did on a re-run after a takeover: the step records
    // it ok, never skipped or failed; a write recorded ok was executed by the external system (this
    // effect, in this attempt or an earlier one). Judged on the run's last checkpoint, which keeps every
    // finished step's results.
    for (const task of analysis.tasks.values()) {
      const intended = writes(task.id);
      if (intended === undefined) continue;
      const messages = (world.checkpoints.get(task.id)?.state as { messages?: { role?: string; step?: number; results?: { toolCallId?: string; status?: string }[] }[] } | undefined)?.messages ?? [];
      const ledgerKeys = new Set((ledger.get(task.id) ?? []).map((row) => `${row.action}\u0000${row.requestKey}`));
      for (const message of messages) {
        if (message.role !== 'tool' || typeof message.step !== 'number') continue;
        for (const result of message.results ?? []) {
          const write = result.toolCallId === undefined ? undefined : intended.get(result.toolCallId);
          if (write === undefined || write.step !== message.step) continue;
          // A plain step's results carry no status: each is the answer of a call that returned.
          if (result.status === undefined || result.status === 'ok') {
            if ((executionsOf.get(write.effect) ?? []).length === 0) {
              out.add('recorded', `task ${task.id}: step ${write.step} records its ${write.tool} (${write.toolCallId}) done, but the external system never executed that effect`, { taskId: task.id });
            }
            continue;
          }
          const held = [...effectsOfKey].filter(([key, effects]) => effects.has(write.effect) && ledgerKeys.has(`${write.tool}\u0000${key}`)).map(([key]) => key);
          if (held.length > 0) {
            const executed = (executionsOf.get(write.effect) ?? []).length;
            out.add(
              'recorded',
              `task ${task.id}: step ${write.step} records its ${write.tool} (${write.toolCallId}) ${String(result.status)}, but the ledger holds its effect under ${held.join(', ')} (executed ${executed} time${executed === 1 ? '' : 's'}): a write that happened is recorded ok, whatever its dependencies did on a re-run (A7, R2)`,
              { taskId: task.id },
            );
          }
        }
      }
    }
    for (const task of analysis.tasks.values()) {
      const intended = writes(task.id);
      if (intended === undefined || task.state !== 'done') continue;
      const recordedOk = writesRecordedOk(intended, world.checkpoints.get(task.id)?.state);
      const byEffect = new Map<string, IntendedWrite[]>();
      for (const write of intended.values()) {
        const list = byEffect.get(write.effect);
        if (list === undefined) byEffect.set(write.effect, [write]);
        else list.push(write);
      }
      for (const [effect, calls] of byEffect) {
        // A graph step's write owes at most once (the rules above for every effect); whether it ran is the
        // step's partial outcome, which a repeat after a takeover may report failed though the first
        // attempt's effect happened (the ledger then lacks it: noted as a gap, not judged here). A write
        // the step's results record ok was executed once and is in the ledger, like a plain step's.
        if (calls.every((call) => call.optional && !recordedOk.has(call.toolCallId))) continue;
        const first = calls[0]!;
        const executions = executionsOf.get(effect) ?? [];
        const keys = [...new Set(executions.map((execution) => execution.requestKey))];
        const named = keys.length > 0 ? keys.join(', ') : first.toolCallId;
        if (executions.length !== 1) out.add('missing', `task ${task.id}: done, but its ${first.tool} (${named}) was executed ${executions.length} times`, { taskId: task.id });
        const sentKeys = new Set([...effectsOfKey].filter(([, effects]) => effects.has(effect)).map(([key]) => key));
        if (world.effects !== undefined && !(ledger.get(task.id) ?? []).some((row) => row.action === first.tool && sentKeys.has(row.requestKey))) {
          out.add('ledger', `task ${task.id}: done, but the ledger has no ${first.tool} under ${sentKeys.size > 0 ? [...sentKeys].join(' or ') : `any key (${first.toolCallId} was never sent)`}`, { taskId: task.id });
        }
      }
    }
    return out.list;
  },
};

/**
 * T2: for an effect a twin of a team's external system executed, why it ran again: the tool sent no
 * idempotency key, or one of its own that the takeover's repeat did not reuse (W4: pass requestKey).
 */
function twinHint(execution: ProviderOperation): string {
  if (execution.external === undefined) return '';
  const call = `tool call ${execution.toolCallId ?? '?'} (${execution.actor}@g${execution.generation})`;
  if (execution.idempotencyKey === undefined) return `: ${call} sent it to ${execution.external} with no idempotency key, so the repeat executed again; pass context.requestKey as the idempotency key (W4)`;
  return `: ${call} sent it to ${execution.external} with idempotency key ${execution.idempotencyKey}, not the request key, and the repeat's key differed; pass context.requestKey as the idempotency key (W4)`;
}

/**
 * A7: the tool calls of the writes a run's last checkpoint records `ok`: the step's outcome says the
 * write happened and its result came back, so it was executed once and the ledger holds it.
 */
function writesRecordedOk(intended: ReadonlyMap<string, IntendedWrite>, state: unknown): Set<string> {
  const calls = new Set<string>();
  const messages = (state as { messages?: { role?: string; step?: number; results?: { toolCallId?: string; status?: string }[] }[] } | undefined)?.messages ?? [];
  for (const message of messages) {
    if (message.role !== 'tool' || typeof message.step !== 'number') continue;
    for (const result of message.results ?? []) {
      const write = result.toolCallId === undefined ? undefined : intended.get(result.toolCallId);
      if (write !== undefined && write.step === message.step && result.status === 'ok') calls.add(write.toolCallId);
    }
  }
  return calls;
}
