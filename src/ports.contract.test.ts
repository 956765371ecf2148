import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../sim/clock.ts';
import { EventLoop } from '../sim/event-loop.ts';
import { SeededRandom } from '../sim/random.ts';
import type { VirtualWaiter } from '../sim/waiter.ts';
import { CryptoRandom } from './adapters/random.ts';
import { SystemClock } from './adapters/clock.ts';
import { TimerWaiter } from './adapters/waiter.ts';
import type { Clock, Random, Waiter } from './ports.ts';

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

/**
 * `reproducible`: whether two instances made alike give one stream. The seeded twin must (a seed replays
 * a run, S2); the production source must not (two processes drawing the same jitter would retry in step).
 */
export function runRandomContract(name: string, make: () => Random, reproducible: boolean): void {
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

    it(reproducible ? 'replays one stream from instances made alike' : 'gives instances made alike different streams', () => {
      const first = make();
      const second = make();
      const draws = (random: Random) => Array.from({ length: 100 }, () => random.next());
      if (reproducible) expect(draws(second)).toEqual(draws(first));
      else expect(draws(second)).not.toEqual(draws(first));
    });
  });
}

/**
 * A waiter, the clock its waits are measured on, and how to let its time pass while `body` runs: the
 * body itself for real timers; the event loop's run for ours. `slackMs` is how early a wake may read on
 * the clock: timers and the millisecond wall clock round differently, the virtual timeline does not.
 */
interface WaiterFixture {
  waiter: Waiter;
  clock: Clock;
  slackMs: number;
  drive<T>(body: () => Promise<T>): Promise<T>;
}

export function runWaiterContract(name: string, make: () => WaiterFixture): void {
  describe(`Waiter contract: ${name}`, () => {
    it('resolves sleep(ms) no earlier than ms after it was called, on its clock', async () => {
      const { waiter, clock, slackMs, drive } = make();
      for (const ms of [1, 7, 25]) {
        const elapsedMs = await drive(async () => {
          const before = clock.now();
          await waiter.sleep(ms);
          return clock.now() - before;
        });
        expect(elapsedMs, `sleep(${ms})`).toBeGreaterThanOrEqual(ms - slackMs);
      }
    });

    it('yields on sleep(0): work that is runnable now finishes before the sleeper wakes', async () => {
      const { waiter, drive } = make();
      const order = await drive(async () => {
        const order: string[] = [];
        const sleeper = (async () => {
          await waiter.sleep(0);
          order.push('sleeper');
        })();
        const busy = (async () => {
          for (let step = 0; step < 50; step++) await Promise.resolve();
          order.push('busy');
        })();
        await Promise.all([sleeper, busy]);
        return order;
      });
      expect(order).toEqual(['busy', 'sleeper']);
    });

    it('treats a negative wait as a zero wait', async () => {
      const { waiter, clock, drive } = make();
      const elapsedMs = await drive(async () => {
        const before = clock.now();
        await waiter.sleep(-1_000);
        return clock.now() - before;
      });
      expect(elapsedMs).toBeGreaterThanOrEqual(0);
      expect(elapsedMs).toBeLessThan(1_000);
    });

    it('wakes sleepers in order of deadline, and sleepers with one deadline in the order they slept', async () => {
      const { waiter, drive } = make();
      const order = await drive(async () => {
        const order: string[] = [];
        const sleeps = (
          [['a', 30], ['b', 10], ['c', 20], ['d', 10], ['e', 0], ['f', 0]] as const
        ).map(([label, ms]) => waiter.sleep(ms).then(() => order.push(label)));
        await Promise.all(sleeps);
        return order;
      });
      expect(order).toEqual(['e', 'f', 'b', 'd', 'c', 'a']);
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

runClockContract('VirtualClock moved by hand', () => {
  const clock = new VirtualClock();
  return {
    clock,
    elapse: async (ms) => {
      clock.advanceBy(ms);
    },
  };
});

runRandomContract('CryptoRandom', () => new CryptoRandom(), false);
runRandomContract('SeededRandom', () => new SeededRandom('contract'), true);
runRandomContract('SeededRandom fork', () => new SeededRandom(0).fork('ids'), true);

runWaiterContract('TimerWaiter', () => ({
  waiter: new TimerWaiter(),
  clock: new SystemClock(),
  slackMs: 1,
  drive: (body) => body(),
}));

runWaiterContract('VirtualWaiter', () => {
  const loop = new EventLoop();
  const waiter: VirtualWaiter = loop.waiter;
  return {
    waiter,
    clock: loop.clock,
    slackMs: 0,
    drive: async (body) => {
      const result = body();
      await loop.run();
      return result;
    },
  };
});
