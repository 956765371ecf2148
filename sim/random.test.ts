import { describe, expect, it } from 'vitest';
import { SeededRandom } from './random.ts';

const draw = (random: SeededRandom, count = 20): number[] => Array.from({ length: count }, () => random.next());

describe('SeededRandom', () => {
  it('replays the same stream for the same seed, and a number seed means its decimal string', () => {
    expect(draw(new SeededRandom(42))).toEqual(draw(new SeededRandom(42)));
    expect(draw(new SeededRandom(42))).toEqual(draw(new SeededRandom('42')));
    expect(draw(new SeededRandom(42))).not.toEqual(draw(new SeededRandom(43)));
  });

  it('forks reproducible named streams that do not depend on what the parent drew', () => {
    const untouched = new SeededRandom('root');
    const used = new SeededRandom('root');
    draw(used, 1_000);
    expect(draw(used.fork('faults'))).toEqual(draw(untouched.fork('faults')));
    expect(untouched.fork('faults').fork('kill').seed).toBe('root/faults/kill');
  });

  it('gives each named fork a stream independent of its siblings and its parent', () => {
    const root = new SeededRandom(7);
    const streams = [root, root.fork('workload'), root.fork('faults'), root.fork('latency'), root.fork('ids')];
    const firsts = streams.map((stream) => draw(stream, 8).join(','));
    expect(new Set(firsts).size).toBe(streams.length);
    // Streams should not be shifted copies of each other either: no value of one appears in another.
    const values = streams.map((stream) => new Set(draw(stream, 1_000)));
    for (let a = 0; a < values.length; a++) {
      for (let b = a + 1; b < values.length; b++) {
        const shared = [...(values[a] ?? [])].filter((value) => values[b]?.has(value));
        expect(shared).toEqual([]);
      }
    }
  });

  it('draws integers in the inclusive range, reaching both ends', () => {
    const random = new SeededRandom('int');
    const seen = new Set<number>();
    for (let index = 0; index < 2_000; index++) {
      const value = random.int(-3, 3);
      expect(Number.isInteger(value) && value >= -3 && value <= 3).toBe(true);
      seen.add(value);
    }
    expect([...seen].sort((a, b) => a - b)).toEqual([-3, -2, -1, 0, 1, 2, 3]);
    expect(random.int(5, 5)).toBe(5);
    expect(() => random.int(2, 1)).toThrow(RangeError);
  });

  it('draws floats in [min, max) and honours the extremes of chance', () => {
    const random = new SeededRandom('float');
    for (let index = 0; index < 1_000; index++) {
      const value = random.float(10, 20);
      expect(value >= 10 && value < 20).toBe(true);
      expect(random.chance(0)).toBe(false);
      expect(random.chance(1)).toBe(true);
    }
    expect(() => random.chance(1.5)).toThrow(RangeError);
    expect(() => random.chance(Number.NaN)).toThrow(RangeError);
  });

  it('picks members and shuffles a copy into a permutation, reproducibly', () => {
    const items = ['a', 'b', 'c', 'd', 'e', 'f'] as const;
    const random = new SeededRandom('shuffle');
    expect(items).toContain(random.pick(items));
    const shuffled = new SeededRandom('shuffle').shuffle(items);
    expect([...shuffled].sort()).toEqual([...items]);
    expect(items).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(new SeededRandom('shuffle').shuffle(items)).toEqual(shuffled);
    expect(() => random.pick([])).toThrow(RangeError);
  });

  it('refuses seeds and fork names that would not replay unambiguously', () => {
    expect(() => new SeededRandom(-1)).toThrow(RangeError);
    expect(() => new SeededRandom(1.5)).toThrow(RangeError);
    expect(() => new SeededRandom('')).toThrow(RangeError);
    expect(() => new SeededRandom(1).fork('a/b')).toThrow(RangeError);
    expect(() => new SeededRandom(1).fork('')).toThrow(RangeError);
  });
});
