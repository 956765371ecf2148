import type { EnqueueRequest } from '../../src/queue/types.ts';
import type { WorldResult } from '../world.ts';
import { specCanonicalJson } from './spec-rules.ts';
import { analyse, ViolationList } from './timeline.ts';
import type { Checker } from './types.ts';

/** Q1: the normalised fields the idempotency hash covers (src/queue/enqueue-input.ts). */
function normalised(request: EnqueueRequest): string {
  return specCanonicalJson({
    store: request.store ?? null,
    priority: request.priority,
    payload: request.input,
    tier: request.tier ?? 'standard',
    deadline: request.deadline ?? null,
  });
}

/**
 * I9: one task per (tenant, topic, version); duplicates get the same id; conflicts are refused.
 *
 * Rules:
 * - the final tasks hold each (tenant, topic, version) at most once;
 * - every accepted enqueue of a key got the id of the one task that holds the key, and a `duplicate`
 *   answer came only for a key already held with the same normalised input;
 * - an enqueue whose normalised input differs from the input that first claimed the key was refused
 *   idempotency_conflict (never accepted, never given the id), and an idempotency_conflict refusal
 *   names the task that holds the key and came only when the inputs really differ.
 */
export const i9OneTaskPerKey: Checker = {
  invariant: 'I9',
  kind: 'safety',
  description: 'one task per (tenant, topic, version); duplicates get the same id; conflicts refused',
  check(world: WorldResult) {
    const analysis = analyse(world);
    const out = new ViolationList('I9', 'safety');
    const holder = new Map<string, number>();
    for (const task of analysis.tasks.values()) {
      const key = `${task.tenant}/${task.topic}/v${task.version}`;
      const other = holder.get(key);
      if (other !== undefined) out.add('unique', `tasks ${other} and ${task.id} both hold ${key}`, { taskId: task.id });
      holder.set(key, task.id);
    }
    const first = new Map<string, string>();
    for (const { arrival, result } of world.enqueued) {
      const request = arrival.request;
      const key = `${request.tenant}/${request.topic}/v${request.version}`;
      const input = normalised(request);
      const firstInput = first.get(key);
      const owner = holder.get(key);
      if (result.ok) {
        if (owner !== result.taskId) out.add('same id', `enqueue of ${key} answered task ${result.taskId}, but the key is held by task ${String(owner)}`, { taskId: result.taskId });
        if (firstInput !== undefined && firstInput !== input) out.add('conflict accepted', `enqueue of ${key} with different input was accepted (${result.status}) as task ${result.taskId}`, { taskId: result.taskId });
        if (result.status === 'duplicate' && firstInput === undefined) out.add('duplicate', `enqueue of ${key} answered duplicate though nothing held the key yet`, { taskId: result.taskId });
        // Q1: a resend of a held key is a duplicate, whatever the task is doing; any other answer tells the client a new task was queued.
        if (result.status !== 'duplicate' && firstInput !== undefined && firstInput === input) out.add('resend answered new', `enqueue of ${key} resent the same input and was answered ${result.status}, not duplicate`, { taskId: result.taskId });
        first.set(key, firstInput ?? input);
      } else if (result.error === 'idempotency_conflict') {
        if (firstInput === undefined || firstInput === input) out.add('false conflict', `enqueue of ${key} refused idempotency_conflict though ${firstInput === undefined ? 'nothing held the key' : 'the input is the same'}`);
        if (result.taskId !== undefined && result.taskId !== owner) out.add('false conflict', `idempotency_conflict for ${key} names task ${result.taskId}, the key is held by ${String(owner)}`);
      }
    }
    return out.list;
  },
};
