/** The effect ledger (R3): table `effects`, one row per request key; a repeat gets the first result back. */
import type { EffectRow } from '../store.ts';
import type { Operations } from './runner.ts';
import { read, write } from './statement.ts';

export const effectByKey = read('effectByKey', ['request_key']).one<EffectRow>('SELECT * FROM effects WHERE request_key = :request_key');

/** Records the effect unless its key exists. */
export const effectInsert = write('effectInsert', ['request_key', 'task_id', 'tenant', 'action', 'generation', 'result', 'at']).changes(
  `INSERT INTO effects (request_key, task_id, tenant, action, generation, result, at)
   VALUES (:request_key, :task_id, :tenant, :action, :generation, :result, :at)
   ON CONFLICT (request_key) DO NOTHING`,
);

export const effectList = read('effectList').rows<Omit<EffectRow, 'result'>>(
  'SELECT request_key, task_id, tenant, action, generation, at FROM effects ORDER BY at, request_key',
);

export const effectOperations = {
  effectByKey(requestKey) {
    return this.run(effectByKey, { request_key: requestKey });
  },
  effectInsert(effect) {
    const { requestKey, id, tenant, action, generation, result, now } = effect;
    return this.run(effectInsert, { request_key: requestKey, task_id: id, tenant, action, generation, result, at: now }, (changes) => changes === 1);
  },
  effectList() {
    return this.run(effectList, {});
  },
} satisfies Operations<'effectByKey' | 'effectInsert' | 'effectList'>;
