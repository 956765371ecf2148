import { STALE_LEASE, emit, requireGeneration, requireTaskId, requireWorkerId, type QueueContext } from './context.ts';
import { InputError } from './errors.ts';
import type { Checkpoint, CheckpointResult, CheckpointWrite, Usage } from './types.ts';

interface CheckpointRow {
  task_id: number;
  seq: number;
  generation: number;
  kind: 'A' | 'B';
  step: number;
  state: string;
  usage: string;
  at: number;
  event_seq: number;
}

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
  write: CheckpointWrite,
): CheckpointResult {
  const taskId = requireTaskId(taskIdArgument);
  const workerId = requireWorkerId(workerIdArgument);
  const generation = requireGeneration(generationArgument);
  if (write?.kind !== 'A' && write?.kind !== 'B') throw new InputError('kind', "expected 'A' or 'B'");
  if (!Number.isSafeInteger(write.step) || write.step < 0) throw new InputError('step', 'expected a non-negative integer');
  const usage = checkUsage(write.usage);
  let stateJson: string;
  try {
    // Plain JSON: the state is only stored and read back, never hashed, and it grows with every step.
    stateJson = JSON.stringify(write.state ?? null);
  } catch (error) {
    throw new InputError('state', `is not JSON-serialisable: ${(error as Error).message}`);
  }
  return context.write('checkpoint', (at) => {
    const { statements } = context;
    const bumped = statements.bumpEventSeqFenced.get({ id: taskId, workerId, generation, now: at }) as { event_seq: number } | undefined;
    if (bumped === undefined) return STALE_LEASE;
    const seq = statements.insertCheckpoint.get({
      id: taskId,
      generation,
      kind: write.kind,
      step: write.step,
      state: stateJson,
      usage: JSON.stringify(usage),
      now: at,
      eventSeq: bumped.event_seq,
      // B is always safe to resume from; A only if the writer says its pending calls are safe to repeat.
      requeueSafe: write.kind === 'B' || write.requeueSafe === true ? 1 : 0,
    }) as number;
    emit(context, taskId, bumped.event_seq, 'checkpoint', at, { kind: write.kind, step: write.step, checkpointSeq: seq, generation, usage }, { workerId, generation });
    return { ok: true, seq, eventSeq: bumped.event_seq };
  });
}

export function lastCheckpoint(context: QueueContext, taskIdArgument: number): Checkpoint | undefined {
  const taskId = requireTaskId(taskIdArgument);
  const row = context.read('lastCheckpoint', () => context.statements.lastCheckpoint.get(taskId) as CheckpointRow | undefined);
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
