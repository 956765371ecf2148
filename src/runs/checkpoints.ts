import { STALE_LEASE, emit, fence, holder, read, requireTaskId, write, type QueueContext, type Holder } from '../queue/context.ts';
import { recordConsumption } from '../queue/budgets.ts';
import { InputError } from '../queue/errors.ts';
import { hasBudgets } from '../queue/transition.ts';
import type { Checkpoint, CheckpointResult, CheckpointWrite, Usage } from '../queue/types.ts';
import type { Step, StoreTx } from '../store/store.ts';

/**
 * R1: a fenced checkpoint write (Q8). A after the model decision, B after all tool results of the step.
 * The checkpoint and its event commit together, or neither does; a zombie's checkpoint is refused.
 * Usage is cumulative for the run and accumulates only here (R4), so settlement charges what was
 * checkpointed and never a model call whose answer was lost with its worker.
 */
export function writeCheckpoint(
  context: QueueContext,
  taskIdArgument: number,
  workerIdArgument: string,
  generationArgument: number,
  checkpoint: CheckpointWrite,
): Promise<CheckpointResult> {
  const who = holder(taskIdArgument, workerIdArgument, generationArgument);
  if (checkpoint?.kind !== 'A' && checkpoint?.kind !== 'B') throw new InputError('kind', "expected 'A' or 'B'");
  if (!Number.isSafeInteger(checkpoint.step) || checkpoint.step < 0) throw new InputError('step', 'expected a non-negative integer');
  const usage = checkUsage(checkpoint.usage);
  let stateJson: string;
  try {
    // Plain JSON: the state is only stored and read back, never hashed, and it grows with every step.
    stateJson = JSON.stringify(checkpoint.state ?? null);
  } catch (error) {
    throw new InputError('state', `is not JSON-serialisable: ${(error as Error).message}`);
  }
  return write(context, 'checkpoint', (tx, at) => checkpointIn(context, tx, at, who, checkpoint, stateJson, usage));
}

function* checkpointIn(context: QueueContext, tx: StoreTx, at: number, who: Holder, checkpoint: CheckpointWrite, stateJson: string, usage: Usage): Step<CheckpointResult> {
  const eventSeq = yield* tx.holderBumpEventSeq(fence(who, at));
  if (eventSeq === undefined) return STALE_LEASE;
  const seq = yield* tx.checkpointInsert({
    id: who.taskId,
    generation: who.generation,
    kind: checkpoint.kind,
    step: checkpoint.step,
    state: stateJson,
    usage: JSON.stringify(usage),
    now: at,
    eventSeq,
    // B is always safe to resume from; A only if the writer says its pending calls are safe to repeat.
    requeueSafe: checkpoint.kind === 'B' || checkpoint.requeueSafe === true ? 1 : 0,
  });
  // A1: what the attempt really consumed of its metered budgets, recorded with the checkpoint.
  const units = hasBudgets(context) ? yield* recordConsumption(context.config, tx, who.taskId, who.generation, usage, at) : undefined;
  const data: Record<string, unknown> = { kind: checkpoint.kind, step: checkpoint.step, checkpointSeq: seq, generation: who.generation, usage };
  if (units !== undefined && Object.keys(units.consumed).length > 0) data.consumed = units.consumed;
  if (units !== undefined && Object.keys(units.overdraft).length > 0) data.overdraft = units.overdraft;
  yield* emit(tx, who.taskId, eventSeq, 'checkpoint', at, data, who);
  return { ok: true, seq, eventSeq };
}

/** R2: the newest checkpoint of a run, whichever generation wrote it. */
export async function lastCheckpoint(context: QueueContext, taskIdArgument: number): Promise<Checkpoint | undefined> {
  const taskId = requireTaskId(taskIdArgument);
  const row = await read(context, 'lastCheckpoint', (tx) => tx.checkpointLast(taskId));
  if (row === undefined) return undefined;
  return {
    taskId: row.task_id,
    seq: row.seq,
    generation: row.generation,
    kind: row.kind,
    step: row.step,
    state: JSON.parse(row.state),
    usage: JSON.parse(row.usage) as Usage,
    at: row.at,
    eventSeq: row.event_seq,
  };
}

function checkUsage(usage: unknown): Usage {
  const value = usage as Partial<Usage> | undefined;
  for (const field of ['inputTokens', 'outputTokens', 'modelCalls'] as const) {
    const n = value?.[field];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new InputError(`usage.${field}`, 'expected a non-negative integer');
  }
  return { inputTokens: value!.inputTokens!, outputTokens: value!.outputTokens!, modelCalls: value!.modelCalls! };
}
