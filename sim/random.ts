import seedrandom from 'seedrandom';
import type { Random } from '../src/ports.ts';

/** A root seed: a string, or a non-negative integer (which means the same as its decimal string). */
export type Seed = string | number;

/** Normalises a seed to the string seedrandom is keyed with, refusing ones that would not replay. */
export function seedKey(seed: Seed): string {
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new RangeError(`a numeric seed must be a non-negative safe integer, got ${seed}`);
    }
    return String(seed);
  }
  if (seed.length === 0) throw new RangeError('a seed must not be empty');
  return seed;
}

/**
 * The simulator's twin of `CryptoRandom` (S2): a deterministic stream from seedrandom's Alea generator
 * (fast, 53-bit doubles, the same sequence on every platform).
 *
 * `fork(name)` derives a named stream from this stream's *seed*, not from its state. That keeps the
 * streams independent: drawing one more value for the workload does not shift a single fault decision,
 * so a seed stays comparable across harmless changes to one component. The flip side is that forking the
 * same name twice yields the same stream; give every component its own name.
 */
export class SeededRandom implements Random {
  /** The full derivation path, e.g. `42/faults/kill`; it replays this exact stream. */
  readonly seed: string;
  private readonly generator: seedrandom.PRNG;

  constructor(seed: Seed) {
    this.seed = seedKey(seed);
    this.generator = seedrandom.alea(this.seed);
  }

  /** A uniform double in [0, 1). */
  next(): number {
    return this.generator.double();
  }

  /** An independent stream named `name`, reproducible from the root seed alone. */
  fork(name: string): SeededRandom {
    if (name.length === 0 || name.includes('/')) {
      // '/' separates path segments; allowing it would let fork('a/b') collide with fork('a').fork('b').
      throw new RangeError(`a fork name must be non-empty and contain no '/', got ${JSON.stringify(name)}`);
    }
    return new SeededRandom(`${this.seed}/${name}`);
  }

  /** A uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) {
      throw new RangeError(`int needs safe integers with min <= max, got [${min}, ${max}]`);
    }
    const span = max - min + 1;
    // A double has 53 bits, so the floor is unbiased enough only while span stays well below 2^53.
    if (span > 2 ** 48) throw new RangeError(`int span ${span} is too wide for a 53-bit double`);
    return min + Math.floor(this.next() * span);
  }

  /** A uniform double in [min, max). */
  float(min: number, max: number): number {
    if (!Number.isFinite(min) || !Number.isFinite(max) || min > max) {
      throw new RangeError(`float needs finite bounds with min <= max, got [${min}, ${max})`);
    }
    return min + this.next() * (max - min);
  }

  /** True with probability `p`; `chance(0)` is never true and `chance(1)` always is. */
  chance(p: number): boolean {
    if (!(p >= 0 && p <= 1)) throw new RangeError(`a probability must be in [0, 1], got ${p}`);
    return this.next() < p;
  }

  /** One element, uniformly. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('cannot pick from an empty array');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** A shuffled copy (Fisher-Yates); the input is left untouched. */
  shuffle<T>(items: readonly T[]): T[] {
    const result = items.slice();
    for (let index = result.length - 1; index > 0; index--) {
      const other = this.int(0, index);
      const held = result[index] as T;
      result[index] = result[other] as T;
      result[other] = held;
    }
    return result;
  }
}
