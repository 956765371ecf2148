import type { WorkQueue } from '../queue/types.ts';
import { OpsError } from './errors.ts';
import { inputErrorOf, parseTaskId } from './model.ts';

/**
 * O1, O3: the operator's actions, for both fronts. Each is one call of the queue's API, so it is
 * fenced, recorded in the event log and typed like any call; a refusal changes nothing and comes back
 * as an OpsError carrying the queue's own error (`queueError`). Arguments are checked here first, so
 * a malformed one never reaches the queue.
 */
export type OpsAction =
  | { action: 'cancel'; taskId: unknown }
  | { action: 'confirm-stopped'; taskId: unknown; generation: unknown }
  | { action: 'pause'; tenant: unknown; reason: unknown }
  | { action: 'resume'; tenant: unknown }
  | { action: 'redrive'; taskId: unknown };

export const ACTIONS = ['cancel', 'confirm-stopped', 'pause', 'resume', 'redrive'] as const;
export type ActionName = (typeof ACTIONS)[number];

export interface ActionDone {
  action: ActionName;
  /** What happened, one sentence for people. */
  message: string;
  /** The queue's answer as it gave it. */
  result: Record<string, unknown>;
}

/** Who confirms a stop from these fronts (Q11: the trusted execution layer; never a model or a tool). */
export const OPERATOR_SOURCE = 'operator';

export async function runAction(queue: WorkQueue, request: OpsAction, source: string = OPERATOR_SOURCE): Promise<ActionDone> {
  try {
    return await perform(queue, request, source);
  } catch (error) {
    throw inputErrorOf(error);
  }
}

async function perform(queue: WorkQueue, request: OpsAction, source: string): Promise<ActionDone> {
  switch (request.action) {
    case 'cancel': {
      const id = parseTaskId(request.taskId);
      const answer = await queue.cancel(id);
      if (!answer.ok) throw refusal(answer, id);
      return { action: 'cancel', message: answer.state === 'cancelled' ? `task ${id} cancelled` : `task ${id}: cancel requested; its worker stops at the next step boundary`, result: answer };
    }
    case 'confirm-stopped': {
      const id = parseTaskId(request.taskId);
      const generation = parseGeneration(request.generation);
      const answer = await queue.confirmStopped(id, generation, source);
      if (!answer.ok) throw refusal(answer, id);
      return { action: 'confirm-stopped', message: `task ${id} generation ${generation} confirmed stopped: now ${answer.next}`, result: answer };
    }
    case 'pause':
    case 'resume': {
      const tenant = requireText(request.tenant, 'tenant');
      const answer = request.action === 'pause' ? await queue.pauseTenant(tenant, requireText(request.reason, 'reason')) : await queue.resumeTenant(tenant);
      if (!answer.ok) throw new OpsError('invalid_input', answer.message, { queueError: answer.error });
      const verb = request.action === 'pause' ? 'paused' : 'resumed';
      return { action: request.action, message: answer.changed ? `tenant ${tenant} ${verb}` : `tenant ${tenant} was already ${verb}: nothing changed`, result: answer };
    }
    case 'redrive': {
      const id = parseTaskId(request.taskId);
      const task = await queue.get(id);
      if (task === undefined) throw new OpsError('not_found', `no task ${id}`);
      const answer = await queue.redrive(id);
      if (!answer.ok) throw refusal(answer, id, task.state);
      return { action: 'redrive', message: `task ${id} redriven: ready again with a fresh set of attempts`, result: answer };
    }
    default:
      throw new OpsError('invalid_input', `action expects one of ${ACTIONS.join(', ')}, got ${JSON.stringify((request as { action: unknown }).action)}`);
  }
}

function refusal(answer: { error: string; message: string }, id: number, state?: string): OpsError {
  if (answer.error === 'not_found') return new OpsError('not_found', `no task ${id}`, { queueError: answer.error });
  const where = state === undefined ? '' : ` (task ${id} is ${state})`;
  // Both fronts put the code first ('leasehold cancel: refused: ...', the page's 'refused: ...'): the message does not repeat it.
  return new OpsError('refused', `${answer.error}: ${answer.message}${where}`, { queueError: answer.error });
}

function parseGeneration(value: unknown): number {
  const generation = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(generation) || generation < 0) throw new OpsError('invalid_input', `generation expects a non-negative integer, got ${JSON.stringify(value)}`);
  return generation;
}

function requireText(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new OpsError('invalid_input', `${field} expects a non-empty string`);
  return value;
}
