/**
 * Test-only: a queue with work in every state the operator looks at, and hostile text in every field a
 * person can set (tenant, topic, payload, error text, a pause reason). Used by the ops unit tests and the
 * dashboard's browser test, on SQLite or PostgreSQL.
 */
import type { Store } from '../../store/store.ts';
import type { QueueConfig, WorkQueue } from '../../queue/types.ts';
import { openWorkQueue } from '../../work-queue.ts';

export const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>'"&amp;<b>bold</b>`;
export const T0 = Date.UTC(2026, 0, 1, 9);

/** The workers' queue configuration of the populated queue (maxAttempts 1: a confirmed stop of its uncertain task ends it failed). */
export const POPULATED_CONFIG = { maxAttempts: 1, globalLimit: 8, perTenantLimit: 4, budgets: { model_tokens: { kind: 'rate', capacity: 100_000, refill: 100_000, periodMs: 60_000 } } } as const satisfies Partial<QueueConfig>;

export interface Populated {
  queue: WorkQueue;
  clock: { t: number; now(): number };
  /** The task ids by the state each is left in. */
  ids: { ready: number; running: number; uncertain: number; done: number; failed: number; dead: number; cancelled: number; superseded: number; hostile: number };
}

/** Opens `db` (a file, a URL or a Store) and fills it; the clock stands still unless the test moves it. */
export async function populate(db: string | Store): Promise<Populated> {
  const clock = { t: T0, now: () => clock.t };
  const queue = openWorkQueue({
    db,
    clock,
    config: POPULATED_CONFIG,
  });
  const enqueue = async (tenant: string, topic: string, version = 1) => {
    const answer = await queue.enqueue({ tenant, topic, version, priority: 5, input: { text: HOSTILE }, needs: { model_tokens: 1_000 } });
    if (!answer.ok) throw new Error(answer.message);
    return answer.taskId;
  };
  const claim = async (worker: string) => {
    const answer = await queue.claim(worker);
    if (!answer.ok) throw new Error(`claim by ${worker}: ${answer.reason}`);
    return answer.task;
  };
  const uncertain = await enqueue('acme', 'order-1');
  const failed = await enqueue(HOSTILE, HOSTILE);
  const done = await enqueue('globex', 'invoice-1');
  const dead = await enqueue('acme', 'order-2');
  const running = await enqueue('initech', 'ticket-1');
  const ready = await enqueue('acme', 'order-3');
  const cancelled = await enqueue('globex', 'invoice-2');
  const superseded = await enqueue('initech', 'ticket-2');
  await enqueue('initech', 'ticket-2', 2);
  await enqueue('globex', 'invoice-3');
  await claim('w-uncertain');
  const f = await claim('w-fails');
  clock.t += 1_000;
  await queue.fail(f.id, 'w-fails', f.generation, { errorClass: 'business_error', message: HOSTILE });
  const c = await claim('w-done');
  await queue.checkpoint(c.id, 'w-done', c.generation, { kind: 'B', step: 1, state: { note: HOSTILE }, usage: { inputTokens: 10, outputTokens: 5, modelCalls: 1 } });
  await queue.recordEffect(c.id, 'w-done', c.generation, { requestKey: `${c.id}:refund:${HOSTILE}`, action: HOSTILE, result: { ok: HOSTILE } });
  await queue.complete(c.id, 'w-done', c.generation, { answer: HOSTILE });
  const d = await claim('w-dead');
  clock.t += 31_000;
  await queue.expireLeases();
  await queue.confirmStopped(d.id, d.generation, 'supervisor');
  await claim('w-running');
  await queue.cancel(cancelled);
  await queue.pauseTenant('initech', `billing ${HOSTILE}`);
  clock.t += 5_000;
  return { queue, clock, ids: { ready, running, uncertain, done, failed, dead, cancelled, superseded, hostile: failed } };
}
