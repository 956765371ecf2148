import { describe, expect, it } from 'vitest';
import { EventLoop } from './event-loop.ts';
import { History } from './history.ts';
import { SeededRandom, type Seed } from './random.ts';
import { NondeterminismError, sameSeedSameTrace } from './trace-hash.ts';

/**
 * A miniature world: actors with seeded think times claim and complete made-up tasks, a fault stream
 * pauses some of them and jumps the clock. Enough moving parts for the trace to depend on every stream.
 */
async function miniatureRun(seed: Seed): Promise<string> {
  const root = new SeededRandom(seed);
  const latency = root.fork('latency');
  const faults = root.fork('faults');
  const ids = root.fork('ids');
  const loop = new EventLoop();
  const history = new History(loop);
  const actor = async (name: string): Promise<void> => {
    for (let step = 0; step < 20; step++) {
      await loop.sleep(latency.int(0, 50));
      const taskId = ids.int(1, 1_000);
      await history.record(name, 'claim', { taskId }, async () => {
        await loop.sleep(latency.int(1, 5));
        return faults.chance(0.1) ? { ok: false, error: 'stale_lease' } : { ok: true };
      });
      if (faults.chance(0.05)) {
        history.note('pause', 'sim', { target: name });
        await loop.sleep(faults.int(100, 1_000));
        history.note('resume', 'sim', { target: name });
      }
    }
  };
  loop.after(faults.int(0, 500), () => {
    const deltaMs = faults.int(-60_000, 60_000);
    loop.clock.jump(deltaMs);
    history.note('clock-jump', 'sim', { deltaMs });
  });
  for (let index = 0; index < 4; index++) void actor(`worker-${index}#0`);
  await loop.run({ maxEvents: 100_000 });
  return history.traceHash();
}

describe('trace hash determinism', () => {
  it('gives the same seed the same trace hash, and different seeds different ones', async () => {
    const hashes = await sameSeedSameTrace(miniatureRun, [0, 1, 2, 'replay-me', 12345]);
    expect(new Set(hashes.values()).size).toBe(5);
  });

  it('catches a run that depends on state outside its seed', async () => {
    let leaked = 0;
    const leaky = async (seed: Seed): Promise<string> => `${await miniatureRun(seed)}:${leaked++}`;
    const outcome = sameSeedSameTrace(leaky, [3]);
    await expect(outcome).rejects.toBeInstanceOf(NondeterminismError);
    await expect(outcome).rejects.toMatchObject({ seed: '3' });
  });

  it('refuses to check determinism with fewer than two runs', async () => {
    await expect(sameSeedSameTrace(miniatureRun, [1], { runsPerSeed: 1 })).rejects.toThrow(RangeError);
  });
});
