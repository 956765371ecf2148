import { createHash, type Hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import { seedKey, type Seed } from './random.ts';

/**
 * The trace hash (S6, I14): sha256 over the JSONL of a history, each line its entry in canonical JSON.
 * It is kept incrementally, so reading it at the end of a long run costs nothing extra.
 */
export class TraceHasher {
  private readonly hash: Hash = createHash('sha256');

  /** Feeds one already-canonical line (without its newline). */
  addLine(line: string): void {
    this.hash.update(line);
    this.hash.update('\n');
  }

  /** The hex digest so far; more lines may follow. */
  /** The same bytes as addLine over lines[from..], in one update. */
  addLines(lines: readonly string[], from = 0): void {
    if (from >= lines.length) return;
    // The joined text is hashed as it is, its newline after it: appending the newline to the text first
    // would make a new string of the whole batch, which the hash would then copy once more.
    this.hash.update((from === 0 ? lines : lines.slice(from)).join('\n'));
    this.hash.update('\n');
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}

/** The trace hash of a list of entries, equal to `History.traceHash()` for the same entries. */
export function traceHashOf(entries: readonly unknown[]): string {
  const hasher = new TraceHasher();
  for (const entry of entries) hasher.addLine(canonicalJson(entry));
  return hasher.digest();
}

/** The same seed produced different traces: the run depends on something outside the seed (exit 3). */
export class NondeterminismError extends Error {
  override readonly name = 'NondeterminismError';
  constructor(
    readonly seed: string,
    readonly hashes: readonly string[],
  ) {
    super(`seed ${seed} is not deterministic: trace hashes ${hashes.join(' != ')}`);
  }
}

export interface SameSeedSameTraceConstraints {
  /** How many times each seed is run; at least 2. */
  runsPerSeed?: number;
}

/**
 * Runs each seed several times and throws a `NondeterminismError` at the first seed whose runs disagree,
 * in the spirit of fast-check's assertProduceSameValueGivenSameSeed. Runs are sequential, so a leak of
 * state from one run into the next (a module-level counter, a shared cache) shows up as a mismatch too.
 * Returns the hash of each seed for callers that also want to compare across seeds.
 */
export async function sameSeedSameTrace(
  run: (seed: Seed) => string | Promise<string>,
  seeds: readonly Seed[],
  constraints: SameSeedSameTraceConstraints = {},
): Promise<Map<string, string>> {
  const runsPerSeed = constraints.runsPerSeed ?? 2;
  if (!Number.isSafeInteger(runsPerSeed) || runsPerSeed < 2) {
    throw new RangeError(`runsPerSeed must be an integer >= 2, got ${runsPerSeed}`);
  }
  const hashBySeed = new Map<string, string>();
  for (const seed of seeds) {
    const hashes: string[] = [];
    for (let attempt = 0; attempt < runsPerSeed; attempt++) hashes.push(await run(seed));
    const first = hashes[0] as string;
    if (hashes.some((hash) => hash !== first)) throw new NondeterminismError(seedKey(seed), hashes);
    hashBySeed.set(seedKey(seed), first);
  }
  return hashBySeed;
}
