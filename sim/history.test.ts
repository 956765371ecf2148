import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EventLoop } from './event-loop.ts';
import { History, reasonOf } from './history.ts';
import { traceHashOf } from './trace-hash.ts';

const epochMs = 1_700_000_000_000;

describe('History', () => {
  it('records invoke then ok or fail at virtual time, completions inheriting the operation', async () => {
    const loop = new EventLoop();
    const history = new History(loop);
    const claim = history.invoke('worker-1#0', 'claim');
    await loop.run({ untilMs: epochMs + 5 });
    history.ok(claim, { taskId: 7, generation: 1 });
    const heartbeat = history.invoke('worker-1#0', 'heartbeat', { taskId: 7, generation: 1 });
    history.fail(heartbeat, 'stale_generation');
    history.note('kill', 'sim', { target: 'worker-1#0' });
    expect(history.entries()).toEqual([
      { index: 0, type: 'invoke', timeMs: epochMs, actor: 'worker-1#0', op: 'claim' },
      { index: 1, type: 'ok', timeMs: epochMs + 5, actor: 'worker-1#0', op: 'claim', invokeIndex: 0, taskId: 7, generation: 1 },
      { index: 2, type: 'invoke', timeMs: epochMs + 5, actor: 'worker-1#0', op: 'heartbeat', taskId: 7, generation: 1 },
      {
        index: 3, type: 'fail', timeMs: epochMs + 5, actor: 'worker-1#0', op: 'heartbeat', invokeIndex: 2,
        reason: 'stale_generation', taskId: 7, generation: 1,
      },
      { index: 4, type: 'note', timeMs: epochMs + 5, actor: 'sim', kind: 'kill', data: { target: 'worker-1#0' } },
    ]);
  });

  it('refuses to complete an operation twice or to complete a non-invoke', () => {
    const history = new History({ now: () => 0 });
    const invoke = history.invoke('a', 'op');
    history.ok(invoke);
    expect(() => history.fail(invoke, 'again')).toThrow(/already completed/);
    expect(() => history.ok(1)).toThrow(/not an invoke/);
    expect(() => history.ok(99)).toThrow(/not an invoke/);
  });

  it('records an action: core failure shapes and thrown errors become fail entries', async () => {
    const history = new History({ now: () => 0 });
    await history.record('a', 'complete', { taskId: 1 }, () => ({ ok: true }));
    await history.record('a', 'complete', { taskId: 2 }, () => ({ ok: false, error: 'stale_lease' }));
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    await expect(history.record('a', 'claim', {}, async () => Promise.reject(busy))).rejects.toBe(busy);
    const completions = history.entries().filter((entry) => entry.type !== 'invoke');
    expect(completions.map((entry) => (entry.type === 'fail' ? entry.reason : entry.type))).toEqual([
      'ok',
      'stale_lease',
      'SQLITE_BUSY',
    ]);
    expect(reasonOf(new RangeError('bad'))).toBe('RangeError: bad');
  });

  it('freezes data at the moment it is recorded', () => {
    const history = new History({ now: () => 0 });
    const data = { attempts: 1 };
    history.note('pause', 'sim', data);
    const hashBefore = history.traceHash();
    data.attempts = 2;
    expect(history.entries()[0]?.data).toEqual({ attempts: 1 });
    expect(history.traceHash()).toBe(hashBefore);
  });

  it('fails at the recording line when data has no canonical JSON form', () => {
    const history = new History({ now: () => 0 });
    expect(() => history.note('pause', 'sim', { at: Number.NaN })).toThrow(/non-finite/);
    expect(history.length).toBe(0);
  });

  it('hashes exactly the JSONL it exports, one canonical entry per line', () => {
    const history = new History({ now: () => 3 });
    history.ok(history.invoke('w#0', 'enqueue', { data: { z: 1, a: 2 } }), { taskId: 1 });
    const jsonl = history.toJsonl();
    expect(jsonl.split('\n')).toHaveLength(3);
    expect(jsonl.split('\n')[0]).toBe('{"actor":"w#0","data":{"a":2,"z":1},"index":0,"op":"enqueue","timeMs":3,"type":"invoke"}');
    expect(history.traceHash()).toBe(createHash('sha256').update(jsonl).digest('hex'));
    expect(traceHashOf(history.entries())).toBe(history.traceHash());
    expect(new History({ now: () => 0 }).toJsonl()).toBe('');
  });

  it('bounds the number of entries', () => {
    const history = new History({ now: () => 0 }, 2);
    history.note('phase', 'sim');
    history.note('phase', 'sim');
    expect(() => history.note('phase', 'sim')).toThrow(/bound/);
  });
});
