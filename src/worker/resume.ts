import type { ClaimedTask, WorkQueue } from '../queue/types.ts';
import type { RunState } from './types.ts';

/**
 * R2: where a run starts. No checkpoint: from the beginning. Last is B: with the next model call.
 * Last is A: with the recorded tool calls and no new model call. A takeover announces itself with a
 * task_resumed event naming the checkpoint's event sequence, so clients can fold the half-done step.
 * Returns the fenced event's result so the caller can stop on stale_lease.
 */
export async function resumeState(queue: WorkQueue, workerId: string, task: ClaimedTask): Promise<(RunState & { ok: true }) | { ok: false; error: 'stale_lease'; message: string }> {
  // A first claim has nothing to resume: no generation before it could have checkpointed.
  const checkpoint = task.generation === 1 ? undefined : await queue.lastCheckpoint(task.id);
  if (checkpoint === undefined) {
    return { ok: true, step: 0, messages: [], usage: { inputTokens: 0, outputTokens: 0, modelCalls: 0 } };
  }
  const saved = checkpoint.state as RunState;
  const announced = await queue.appendEvent(task.id, workerId, task.generation, 'task_resumed', {
    checkpointKind: checkpoint.kind,
    checkpointSeq: checkpoint.seq,
    checkpointEventSeq: checkpoint.eventSeq,
    step: checkpoint.step,
    fromGeneration: checkpoint.generation,
  });
  if (!announced.ok) return announced;
  const state: RunState = { step: saved.step, messages: [...saved.messages], usage: { ...checkpoint.usage } };
  if (checkpoint.kind === 'A' && saved.pending !== undefined) state.pending = saved.pending;
  return { ok: true, ...state };
}
