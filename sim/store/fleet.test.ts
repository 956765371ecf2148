import { describe, expect, it } from 'vitest';
import { BusyError } from '../../src/queue/errors.ts';
import { SqliteStore } from '../../src/store/sqlite-store.ts';
import { openWorkQueue } from '../../src/work-queue.ts';
import { recordedCall } from '../actors/gated-queue.ts';
import { EventLoop } from '../event-loop.ts';
import { freshMemoryDatabase } from '../memory-image.ts';
import { SeededRandom } from '../random.ts';
import { catalogueScenario } from '../scenarios/registry.ts';
import { World } from '../world.ts';
import { Fleet, type FleetActor, type FleetSpec } from './fleet.ts';

function harness(spec: FleetSpec, seed = 'fleet-test') {
  const loop = new EventLoop();
  const store = SqliteStore.open(freshMemoryDatabase(), { busyTimeoutMs: 0, busyRetries: 0 }, () => loop.clock.now());
  const state = { down: false, commits: [] as (number | undefined)[] };
  const cursor = () => store.readNow('eventCursor', (tx) => tx.eventCursor());
  const fleet = new Fleet({ base: () => store, down: () => state.down, cursor, committed: (invoke) => state.commits.push(invoke) }, new SeededRandom(seed), spec);
  const open = (actor: Partial<FleetActor> & { id: string }) => {
    const connection = fleet.connect({ alive: () => true, waiter: loop.waiter, ...actor });
    return { connection, queue: openWorkQueue({ db: connection, clock: loop.clock, random: new SeededRandom(`${seed}-core`) }) };
  };
  return { loop, store, state, open, cursor };
}

const task = (topic: string) => ({ tenant: 'acme', topic, version: 1, priority: 10, input: { topic } });

describe('the fleet (issue 15)', () => {
  it('runs a transaction the moment it is made when it draws no wait', async () => {
    const { open, cursor } = harness({ interleave: 0, maxWaitMs: 0 });
    const { queue } = open({ id: 'client' });
    const pending = queue.enqueue(task('a'));
    // Committed synchronously, before the promise is awaited: interleave 0 is the world before the fleet.
    expect(cursor()).toBe(1);
    await pending;
  });

  it('lets a later actor commit first when a transaction waits at its BEGIN, and gives each call the cursor of its own commit', async () => {
    const { loop, open } = harness({ interleave: 1, maxWaitMs: 0 });
    const first = open({ id: 'first' });
    const second = open({ id: 'second' });
    const one = recordedCall(first.connection, 1, () => first.queue.enqueue(task('one')));
    const two = recordedCall(second.connection, 2, () => second.queue.enqueue(task('two')));
    // A wait of 0 ms is a loop event at this instant: nothing has run yet.
    await loop.run();
    const [a, b] = await Promise.all([one, two]);
    // Both waited; the loop ran them in the order they were made. Each call's ev is its own commit's.
    expect(a.ev).toBe(1);
    expect(b.ev).toBe(2);
    expect(loop.now()).toBe(loop.clock.monotonicNow());
  });

  it('reorders transactions: over many draws some transaction made later commits before one made earlier', async () => {
    const { loop, open } = harness({ interleave: 0.5, maxWaitMs: 40 });
    const actors = ['a', 'b', 'c'].map((id) => open({ id }));
    const calls: Promise<{ result: unknown; ev: number }>[] = [];
    for (let round = 0; round < 30; round++) {
      actors.forEach((actor, index) => calls.push(recordedCall(actor.connection, round * 3 + index, () => actor.queue.enqueue(task(`${round}-${index}`)))));
    }
    await loop.run();
    const evs = (await Promise.all(calls)).map((call) => call.ev);
    const inversions = evs.filter((ev, index) => index > 0 && ev < evs[index - 1]!).length;
    expect(inversions).toBeGreaterThan(5);
    // Nothing lost, nothing twice: 90 enqueues, 90 distinct commits.
    expect(new Set(evs).size).toBe(90);
  });

  it('never runs the waiting transaction of a process that died meanwhile: nothing is written and the call never settles', async () => {
    const { loop, open, cursor } = harness({ interleave: 1, maxWaitMs: 0 });
    let alive = true;
    const { connection, queue } = open({ id: 'w0#1', alive: () => alive });
    let settled = false;
    void recordedCall(connection, 1, () => queue.enqueue(task('lost'))).finally(() => (settled = true));
    alive = false;
    await loop.run();
    expect(cursor()).toBe(0);
    expect(settled).toBe(false);
  });

  it('kills at a boundary: the hook is asked once per transaction, just before BEGIN, and a true answer sends nothing', async () => {
    const asked: string[] = [];
    const { loop, open, cursor } = harness({ interleave: 0, maxWaitMs: 0 });
    const { queue } = open({ id: 'w0#1', boundary: (operation) => (asked.push(operation), operation === 'claim') });
    await queue.enqueue(task('x'));
    let settled = false;
    void queue.claim('w0#1').finally(() => (settled = true));
    await loop.run();
    expect(asked).toEqual(['enqueue', 'claim']);
    expect(settled).toBe(false);
    expect(cursor()).toBe(1);
  });

  it('fails a transaction that reaches a scheduler that is down with a BusyError, and writes nothing', async () => {
    const { state, open, cursor } = harness({ interleave: 0, maxWaitMs: 0 });
    const { queue } = open({ id: 'client' });
    state.down = true;
    await expect(queue.enqueue(task('x'))).rejects.toBeInstanceOf(BusyError);
    expect(cursor()).toBe(0);
  });

  it('gives a call answered without a transaction (invalid input) the cursor at its answer', async () => {
    const { open } = harness({ interleave: 0, maxWaitMs: 0 });
    const { connection, queue } = open({ id: 'client' });
    await queue.enqueue(task('first'));
    const { result, ev } = await recordedCall(connection, 9, () => queue.enqueue({ ...task('bad'), priority: 99 }));
    expect(result).toMatchObject({ ok: false, error: 'invalid_input' });
    expect(ev).toBe(1);
  });

  it('tells the world which call each write was (the power-loss note maps commits to calls)', async () => {
    const { state, open } = harness({ interleave: 0, maxWaitMs: 0 });
    const { connection, queue } = open({ id: 'client' });
    await recordedCall(connection, 7, () => queue.enqueue(task('x')));
    await queue.enqueue(task('y'));
    expect(state.commits).toEqual([7, undefined]);
  });

  it('draws the same waits for the same seed, and other waits for another', async () => {
    const order = async (seed: string) => {
      const { loop, open } = harness({ interleave: 0.5, maxWaitMs: 40 }, seed);
      const actors = ['a', 'b'].map((id) => open({ id }));
      const calls = [];
      for (let round = 0; round < 20; round++) for (const [index, actor] of actors.entries()) calls.push(recordedCall(actor.connection, round * 2 + index, () => actor.queue.enqueue(task(`${round}-${index}`))));
      await loop.run();
      return (await Promise.all(calls)).map((call) => call.ev).join(',');
    };
    expect(await order('s1')).toBe(await order('s1'));
    expect(await order('s1')).not.toBe(await order('s2'));
  });

  it('interleaves the actors of a real world run: a worker call answered after another actor committed a call made later', async () => {
    const world = new World(catalogueScenario('mixed'), 1);
    const result = await world.run();
    expect(result.crash).toBeUndefined();
    const entries = result.history.entries();
    let overtaken = 0;
    // Answers come in commit order (each call is answered the moment its transaction ran). Overtaken: a
    // call of one actor answered, with a commit strictly before another's, although it was made after it.
    const answered = entries.flatMap((entry) =>
      (entry.type === 'ok' || entry.type === 'fail') && typeof (entry.data as { ev?: unknown } | undefined)?.ev === 'number' ? [{ ...entry, ev: (entry.data as { ev: number }).ev }] : [],
    );
    for (let i = 0; i < answered.length; i++) {
      for (let j = i + 1; j < Math.min(answered.length, i + 20); j++) {
        const [a, b] = [answered[i]!, answered[j]!];
        if (a.invokeIndex === undefined || b.invokeIndex === undefined || a.actor === b.actor) continue;
        if (a.invokeIndex > b.invokeIndex && a.ev < b.ev) overtaken++;
      }
    }
    expect(overtaken).toBeGreaterThan(0);
  }, 60_000);
});
