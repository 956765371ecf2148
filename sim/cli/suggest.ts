/**
 * "Did you mean": the candidate closest to a mistyped word, or undefined when nothing is close enough
 * to be a likely intention. A shared prefix wins (`seeds-count` -> `seeds`); otherwise a small edit
 * distance, scaled to the word's length so that short words do not match everything.
 */
export function closestMatch(word: string, candidates: readonly string[]): string | undefined {
  const typed = word.toLowerCase();
  let best: { candidate: string; cost: number } | undefined;
  for (const candidate of candidates) {
    const known = candidate.toLowerCase();
    const prefix = typed.length >= 3 && known.length >= 3 && (typed.startsWith(known) || known.startsWith(typed));
    const distance = editDistance(typed, known);
    const allowed = Math.max(1, Math.floor(Math.max(typed.length, known.length) / 3));
    if (!prefix && distance > allowed) continue;
    // A prefix match costs less than any edit, so `--seed` suggests `--seeds` only when nothing is closer.
    const cost = prefix ? distance / 100 : distance;
    if (best === undefined || cost < best.cost) best = { candidate, cost };
  }
  return best?.candidate;
}

/** Levenshtein distance with one rolling row; the inputs are command-line words, so small. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] as number;
}
