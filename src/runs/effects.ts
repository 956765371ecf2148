import { canonicalJson } from '../canonical-json.ts';
import { STALE_LEASE, emit, fence, holder, read, write, type QueueContext, type Holder } from '../queue/context.ts';
import { InputError, InvariantError } from '../queue/errors.ts';
import type { EffectRecord, EffectRecordResult, EffectView } from '../queue/types.ts';
import type { Step, StoreTx } from '../store/store.ts';

/** R3: the first recorded result of an effect, if any; a takeover asks before acting again. */
export async function effectResult(context: QueueContext, requestKey: string): Promise<unknown | undefined> {
  if (typeof requestKey !== 'string' || requestKey === '') throw new InputError('requestKey', 'expected a non-empty string');
  const row = await read(context, 'effectResult', (tx) => tx.effectByKey(requestKey));
  return row === undefined ? undefined : JSON.parse(row.result);
}

/**
 * R3: records an effect's result under its request key, fenced (Q8) so a zombie cannot write the
 * ledger. The unique key makes a repeat return the first result instead of a second row.
 */
export function recordEffect(
  context: QueueContext,
  taskIdArgument: number,
  workerIdArgument: string,
  generationArgument: number,
  effect: EffectRecord,
): Promise<EffectRecordResult> {
  const who = holder(taskIdArgument, workerIdArgument, generationArgument);
  if (typeof effect?.requestKey !== 'string' || effect.requestKey === '') throw new InputError('requestKey', 'expected a non-empty string');
  if (typeof effect.action !== 'string' || effect.action === '') throw new InputError('action', 'expected a non-empty string');
  let resultJson: string;
  try {
    resultJson = canonicalJson(effect.result === undefined ? null : effect.result);
  } catch (error) {
    throw new InputError('result', `is not JSON-serialisable: ${(error as Error).message}`);
  }
  return write(context, 'recordEffect', (tx, at) => recordEffectIn(tx, at, who, effect, resultJson));
}

function* recordEffectIn(tx: StoreTx, at: number, who: Holder, effect: EffectRecord, resultJson: string): Step<EffectRecordResult> {
  const eventSeq = yield* tx.holderBumpEventSeq(fence(who, at));
  if (eventSeq === undefined) return STALE_LEASE;
  const task = yield* tx.taskById(who.taskId);
  if (task === undefined) throw new InvariantError(`task ${who.taskId} passed its fence but has no row`);
  const inserted = yield* tx.effectInsert({ requestKey: effect.requestKey, id: who.taskId, tenant: task.tenant, action: effect.action, generation: who.generation, result: resultJson, now: at });
  const first = yield* tx.effectByKey(effect.requestKey);
  if (first === undefined) throw new InvariantError(`effect ${effect.requestKey} was recorded but cannot be read back`);
  yield* emit(tx, who.taskId, eventSeq, 'effect_recorded', at, { requestKey: effect.requestKey, action: effect.action, repeated: !inserted }, who);
  return { ok: true, repeated: !inserted, result: JSON.parse(first.result) };
}

export async function listEffects(context: QueueContext): Promise<EffectView[]> {
  const rows = await read(context, 'effects', (tx) => tx.effectList());
  return rows.map((row) => ({
    requestKey: row.request_key,
    taskId: row.task_id,
    tenant: row.tenant,
    action: row.action,
    generation: row.generation,
    at: row.at,
  }));
}
