import { describe, expect, it } from 'vitest';
import { CallPool, isGraph, planProblem, runGraph, type GraphOptions } from './tool-graph.ts';
import { ToolFailure, type ToolCall, type ToolResult } from './types.ts';

/** A tool bench: every call waits until the test releases it, and the log says what started and ended when. */
function bench(readOnly: ReadonlySet<string>, failing: ReadonlySet<string> = new Set()) {
  const log: string[] = [];
  const waiting = new Map<string, () => void>();
  const options: GraphOptions = {
    pool: new CallPool(8),
    readOnly: (call) => readOnly.has(call.id),
    run: (call) =>
      new Promise<ToolResult>((resolve, reject) => {
        log.push(`start ${call.id}`);
        waiting.set(call.id, () => {
          log.push(`end ${call.id}`);
          if (failing.has(call.id)) reject(new ToolFailure('business_error', `${call.id} failed`));
          else resolve({ toolCallId: call.id, tool: call.tool, result: `${call.id} done` });
        });
      }),
    stopping: () => undefined,
  };
  const flush = async () => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  const finish = async (id: string) => {
    await flush();
    const release = waiting.get(id);
    if (release === undefined) throw new Error(`${id} has not started (log: ${log.join(', ')})`);
    waiting.delete(id);
    release();
    await flush();
  };
  return { log, options, finish, flush, started: () => [...waiting.keys()] };
}

/** Seed 003's example: T1 and T2 read, T3 updates the ticket after both, T4 sends the e-mail after T3. */
const T1_T4: ToolCall[] = [
  { id: 'T1', tool: 'lookup_order', args: {} },
  { id: 'T2', tool: 'search_kb', args: {} },
  { id: 'T3', tool: 'update_ticket', args: {}, dependsOn: ['T1', 'T2'], resource: 'ticket:17' },
  { id: 'T4', tool: 'send_email', args: {}, dependsOn: ['T3'], resource: 'mail:customer' },
];
const READS = new Set(['T1', 'T2']);

describe('A7 the tool-call graph of a step', () => {
  it("runs seed 003's T1..T4 in layers: T1 and T2 at once, T3 after both, T4 after T3", async () => {
    const b = bench(READS);
    const done = runGraph(T1_T4, b.options);
    await b.flush();
    expect(b.started().sort()).toEqual(['T1', 'T2']);
    await b.finish('T1');
    expect(b.started()).toEqual(['T2']);
    await b.finish('T2');
    expect(b.started()).toEqual(['T3']);
    await b.finish('T3');
    await b.finish('T4');
    const results = await done;
    expect(results.map((result) => [result.toolCallId, result.status])).toEqual([['T1', 'ok'], ['T2', 'ok'], ['T3', 'ok'], ['T4', 'ok']]);
    expect(b.log).toEqual(['start T1', 'start T2', 'end T1', 'end T2', 'start T3', 'end T3', 'start T4', 'end T4']);
  });

  it('skips the dependents of a failed call: T3 failing means no e-mail announcing an update that failed', async () => {
    const b = bench(READS, new Set(['T3']));
    const done = runGraph(T1_T4, b.options);
    await b.finish('T1');
    await b.finish('T2');
    await b.finish('T3');
    const results = await done;
    expect(results.find((result) => result.toolCallId === 'T3')).toMatchObject({ status: 'failed', error: { errorClass: 'business_error' } });
    expect(results.find((result) => result.toolCallId === 'T4')).toMatchObject({ status: 'skipped', reason: 'dependency_failed' });
    expect(b.log).not.toContain('start T4');
  });

  it('records partial success: T4 failing leaves T3 updated', async () => {
    const b = bench(READS, new Set(['T4']));
    const done = runGraph(T1_T4, b.options);
    for (const id of ['T1', 'T2', 'T3', 'T4']) await b.finish(id);
    expect((await done).map((result) => result.status)).toEqual(['ok', 'ok', 'ok', 'failed']);
  });

  it('writes one resource one at a time in the order given, and different resources at once', async () => {
    const calls: ToolCall[] = [
      { id: 'a1', tool: 'write', args: {}, resource: 'ticket:1' },
      { id: 'b1', tool: 'write', args: {}, resource: 'ticket:2' },
      { id: 'a2', tool: 'write', args: {}, resource: 'ticket:1' },
    ];
    const b = bench(new Set());
    const done = runGraph(calls, b.options);
    await b.flush();
    expect(b.started().sort()).toEqual(['a1', 'b1']);
    await b.finish('a1');
    expect(b.started().sort()).toEqual(['a2', 'b1']);
    await b.finish('a2');
    await b.finish('b1');
    await done;
  });

  it('keeps at most the pool\'s size of calls in flight, starting the rest in order as places free', async () => {
    const calls: ToolCall[] = Array.from({ length: 5 }, (_, i) => ({ id: `r${i}`, tool: 'read', args: {}, resource: undefined, dependsOn: [] }));
    const b = bench(new Set(calls.map((call) => call.id)));
    const done = runGraph(calls, { ...b.options, pool: new CallPool(2) });
    await b.flush();
    expect(b.started()).toEqual(['r0', 'r1']);
    await b.finish('r1');
    expect(b.started()).toEqual(['r0', 'r2']);
    for (const id of ['r0', 'r2', 'r3', 'r4']) await b.finish(id);
    await done;
    expect(b.log.filter((line) => line.startsWith('start'))).toEqual(['start r0', 'start r1', 'start r2', 'start r3', 'start r4']);
  });

  it('shares one pool between the graphs of a worker\'s runs', async () => {
    const pool = new CallPool(3);
    const first = bench(new Set(['a0', 'a1']));
    const second = bench(new Set(['b0', 'b1']));
    const reads = (prefix: string): ToolCall[] => [0, 1].map((i) => ({ id: `${prefix}${i}`, tool: 'read', args: {}, resource: `${prefix}-lane` }));
    const one = runGraph(reads('a'), { ...first.options, pool });
    const two = runGraph(reads('b'), { ...second.options, pool });
    await first.flush();
    expect([...first.started(), ...second.started()]).toEqual(['a0', 'a1', 'b0']);
    expect(pool.active).toBe(3);
    await first.finish('a0');
    expect(second.started()).toEqual(['b0', 'b1']);
    for (const id of ['a1']) await first.finish(id);
    for (const id of ['b0', 'b1']) await second.finish(id);
    await Promise.all([one, two]);
    expect(pool.active).toBe(0);
  });

  it('refuses a pool of no places', () => {
    expect(() => new CallPool(0)).toThrow('toolConcurrency must be an integer >= 1, got 0');
  });

  it('starts nothing more once a cancel is seen, and skips the rest', async () => {
    const b = bench(READS);
    let cancelled = false;
    const done = runGraph(T1_T4, { ...b.options, stopping: () => (cancelled ? 'cancel_requested' : undefined) });
    await b.finish('T1');
    cancelled = true;
    await b.finish('T2');
    const results = await done;
    expect(results.slice(2).map((result) => [result.status, result.reason])).toEqual([['skipped', 'cancel_requested'], ['skipped', 'dependency_failed']]);
  });

  it('lets an error that is not a tool failure (a lost lease) stop the step once the calls in flight settle', async () => {
    const calls: ToolCall[] = [{ id: 'x', tool: 'read', args: {} }, { id: 'y', tool: 'read', args: {}, dependsOn: ['x'] }];
    const done = runGraph(calls, { pool: new CallPool(4), readOnly: () => true, stopping: () => undefined, run: async () => Promise.reject(new Error('lease lost')) });
    await expect(done).rejects.toThrow('lease lost');
  });

  it('refuses a plan before anything runs: unknown call, self-dependency, repeated id, cycle', () => {
    expect(planProblem(T1_T4)).toBeUndefined();
    expect(planProblem([{ id: 'a', tool: 't', args: {}, dependsOn: ['zz'] }])).toMatch(/depends on unknown call zz/);
    expect(planProblem([{ id: 'a', tool: 't', args: {}, dependsOn: ['a'] }])).toMatch(/depends on itself/);
    expect(planProblem([{ id: 'a', tool: 't', args: {} }, { id: 'a', tool: 't', args: {} }])).toMatch(/appears twice/);
    const cycle: ToolCall[] = [
      { id: 'a', tool: 't', args: {}, dependsOn: ['c'] },
      { id: 'b', tool: 't', args: {}, dependsOn: ['a'] },
      { id: 'c', tool: 't', args: {}, dependsOn: ['b'] },
      { id: 'd', tool: 't', args: {} },
    ];
    expect(planProblem(cycle)).toBe('the calls a, b, c depend on each other in a cycle');
    expect(planProblem([{ id: 'a', tool: 't', args: {}, resource: '' }])).toMatch(/resource must be a non-empty string/);
  });

  it('treats a step as a graph only when a call names a dependency or a resource', () => {
    expect(isGraph([{ id: 'a', tool: 't', args: {} }])).toBe(false);
    expect(isGraph([{ id: 'a', tool: 't', args: {}, dependsOn: [] }])).toBe(false);
    expect(isGraph(T1_T4)).toBe(true);
  });
});

describe('A7: a retryable failure is not an outcome', () => {
  it('fails the step (and so the attempt) on a retryable error: a timed-out write may have happened', async () => {
    const calls: ToolCall[] = [{ id: 'w', tool: 'write', args: {}, resource: 'ticket' }, { id: 'e', tool: 'mail', args: {}, dependsOn: ['w'], resource: 'mail' }];
    const done = runGraph(calls, { pool: new CallPool(2), readOnly: () => false, stopping: () => undefined, run: async () => Promise.reject(new ToolFailure('tool_timeout', 'no answer')) });
    await expect(done).rejects.toThrow('no answer');
  });
});

describe('A7: lanes and a stopped step', () => {
  it('writes that name no resource share their tool\'s lane: two calls of one tool one at a time, another tool at once', async () => {
    const b = bench(new Set());
    const calls: ToolCall[] = [
      { id: 'n1', tool: 'note', args: { n: 1 } },
      { id: 'n2', tool: 'note', args: { n: 2 } },
      { id: 'm1', tool: 'mail', args: {} },
      { id: 'r', tool: 'note', args: { n: 3 }, resource: 'ticket:1' },
    ];
    const done = runGraph(calls, b.options);
    await b.flush();
    // n2 waits for n1 (lane tool:note); m1 has its own lane (tool:mail); r names its resource.
    expect(b.started().sort()).toEqual(['m1', 'n1', 'r']);
    await b.finish('n1');
    expect(b.started().sort()).toEqual(['m1', 'n2', 'r']);
    for (const id of ['n2', 'm1', 'r']) await b.finish(id);
    expect((await done).map((result) => result.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
  });

  it('once a call stops the step (a lost lease), a call waiting for a place in the pool or for a dependency never starts', async () => {
    const started: string[] = [];
    const answers = new Map<string, { resolve: () => void; reject: (error: unknown) => void }>();
    const calls: ToolCall[] = [
      { id: 'a', tool: 'read', args: {} },
      { id: 'lost', tool: 'read', args: {} },
      { id: 'queued', tool: 'read', args: {} },
      { id: 'after', tool: 'read', args: {}, dependsOn: ['a'] },
    ];
    const done = runGraph(calls, {
      // Two places: `queued` waits for one.
      pool: new CallPool(2),
      readOnly: () => true,
      stopping: () => undefined,
      run: (call) =>
        new Promise<ToolResult>((resolve, reject) => {
          started.push(call.id);
          answers.set(call.id, { resolve: () => resolve({ toolCallId: call.id, tool: call.tool, result: call.id }), reject });
        }),
    });
    const flush = async () => {
      for (let i = 0; i < 10; i++) await Promise.resolve();
    };
    await flush();
    expect(started).toEqual(['a', 'lost']);
    answers.get('lost')!.reject(new Error('lease lost'));
    await flush();
    // `a` still runs; when it ends, `queued` gets its place and `after` its dependency, and neither starts.
    answers.get('a')!.resolve();
    await expect(done).rejects.toThrow('lease lost');
    expect(started).toEqual(['a', 'lost']);
  });

  it('refuses a plan whose dependsOn is not a list', () => {
    expect(planProblem([{ id: 'a', tool: 't', args: {} }, { id: 'b', tool: 't', args: {}, dependsOn: 'a' as never }])).toBe('call b: dependsOn must be a list of call ids');
  });
});
