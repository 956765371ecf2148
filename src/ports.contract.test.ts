import { describe, expect, it } from 'vitest';
import { EventLoop } from '../sim/event-loop.ts';
import { SeededRandom } from '../sim/random.ts';
import { CryptoRandom } from './adapters/random.ts';
import { SystemClock } from './adapters/clock.ts';
import { TimerWaiter } from './adapters/waiter.ts';
import type { Clock, Random } from './ports.ts';

/**
 * One contract per port, run against every implementation (Hono's shared router suite): the core may
 * rely on exactly what is checked here, whether it runs in production or in the simulator.
 */

/** A clock plus a way to let time pass for it: real waiting for the system clock, the event loop for ours. */
interface ClockFixture {
  clock: Clock;
  elapse(ms: number): Promise<void>;
}

const year2020Ms = 1_577_836_800_000;
const year2100Ms = 4_102_444_800_000;

export function runClockContract(name: string, make: () => ClockFixture): void {
  describe(`Clock contract: ${name}`, () => {
    it('reads integer milliseconds in a plausible wall-time range', () => {
      const { clock } = make();
      const now = clock.now();
      expect(Number.isSafeInteger(now)).toBe(true);
      expect(now).toBeGreaterThan(year2020Ms);
      expect(now).toBeLessThan(year2100Ms);
    });

    it('never goes backwards while nobody jumps it', async () => {
      const { clock, elapse } = make();
      let previous = clock.now();
      for (let round = 0; round < 5; round++) {
        for (let read = 0; read < 1_000; read++) {
          const now = clock.now();
          expect(now).toBeGreaterThanOrEqual(previous);
          previous = now;
        }
        await elapse(round);
      }
    });

    it('advances by about the time that passed', async () => {
      const { clock, elapse } = make();
      const before = clock.now();
      await elapse(20);
      // Timers and the millisecond wall clock round differently, so allow one millisecond of slack.
      expect(clock.now() - before).toBeGreaterThanOrEqual(19);
    });
  });
}

export function runRandomContract(name: string, make: () => Random): void {
  describe(`Random contract: ${name}`, () => {
    const sampleCount = 10_000;
    const sample = (): number[] => {
      const random = make();
      return Array.from({ length: sampleCount }, () => random.next());
    };

    it('returns finite numbers in [0, 1)', () => {
      for (const value of sample()) {
        expect(Number.isFinite(value) && value >= 0 && value < 1).toBe(true);
      }
    });

    it('does not repeat itself', () => {
      expect(new Set(sample()).size).toBeGreaterThan(sampleCount * 0.99);
    });

    it('is roughly uniform: mean near one half and every tenth of the range filled evenly', () => {
      const values = sample();
      const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
      // The standard error of the mean is about 0.003 here, so 0.05 is over ten sigma.
      expect(Math.abs(mean - 0.5)).toBeLessThan(0.05);
      const buckets = new Array<number>(10).fill(0);
      for (const value of values) buckets[Math.floor(value * 10)]! += 1;
      for (const count of buckets) expect(Math.abs(count - sampleCount / 10)).toBeLessThan(200);
    });
  });
}

runClockContract('SystemClock', () => {
  const waiter = new TimerWaiter();
  return { clock: new SystemClock(), elapse: (ms) => waiter.sleep(ms) };
});

runClockContract('VirtualClock', () => {
  const loop = new EventLoop();
  return {
    clock: loop.clock,
    elapse: async (ms) => {
      await loop.run({ untilMs: loop.now() + ms });
    },
  };
});

runRandomContract('CryptoRandom', () => new CryptoRandom());
runRandomContract('SeededRandom', () => new SeededRandom('contract'));
runRandomContract('SeededRandom fork', () => new SeededRandom(0).fork('ids'));
