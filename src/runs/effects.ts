import { canonicalJson } from '../canonical-json.ts';
import { STALE_LEASE, emit, requireGeneration, requireTaskId, requireWorkerId, type QueueContext } from '../queue/context.ts';
import { InputError } from '../queue/errors.ts';
import type { EffectRecordResult, EffectRecord } from '../queue/types.ts';

interface EffectRow {
  request_key: string;
  task_id: number;
  tenant: string;
  action: string;
  generation: number;
  result: string;
  at: number;
}

/** R3: the first recorded result of an effect, if any; a takeover asks before acting again. */
export function effectResult(context: QueueContext, requestKey: string): unknown | undefined {
  if (typeof requestKey !== 'string' || requestKey === '') throw new InputError('requestKey', 'expected a non-empty string');
  const row = context.read('effectResult', () => context.statements.effectByKey.get(requestKey) as EffectRow | undefined);
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
): EffectRecordResult {
  const taskId = requireTaskId(taskIdArgument);
  const workerId = requireWorkerId(workerIdArgument);
  const generation = requireGeneration(generationArgument);
  if (typeof effect?.requestKey !== 'string' || effect.requestKey === '') throw new InputError('requestKey', 'expected a non-empty string');
  if (typeof effect.action !== 'string' || effect.action === '') throw new InputError('action', 'expected a non-empty string');
  let resultJson: string;
  try {
    resultJson = canonicalJson(effect.result === undefined ? null : effect.result);
  } catch (error) {
    throw new InputError('result', `is not JSON-serialisable: ${(error as Error).message}`);
  }
  return context.write('recordEffect', (at) => {
    const { statements } = context;
    const bumped = statements.bumpEventSeqFenced.get({ id: taskId, workerId, generation, now: at }) as { event_seq: number } | undefined;
    if (bumped === undefined) return STALE_LEASE;
    const tenant = (statements.taskById.get(taskId) as { tenant: string }).tenant;
    const inserted = statements.insertEffect.run({ requestKey: effect.requestKey, id: taskId, tenant, action: effect.action, generation, result: resultJson, now: at });
    const first = statements.effectByKey.get(effect.requestKey) as EffectRow;
    const repeated = inserted.changes === 0;
    emit(context, taskId, bumped.event_seq, 'effect_recorded', at, { requestKey: effect.requestKey, action: effect.action, repeated }, { workerId, generation });
    return { ok: true, repeated, result: JSON.parse(first.result) };
  });
}

export function listEffects(context: QueueContext) {
  return context.read('effects', () =>
    (context.statements.effects.all() as Omit<EffectRow, 'result'>[]).map((row) => ({
      requestKey: row.request_key,
      taskId: row.task_id,
      tenant: row.tenant,
      action: row.action,
      generation: row.generation,
      at: row.at,
    })),
  );
}
