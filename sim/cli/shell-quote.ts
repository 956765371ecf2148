/**
 * Quotes one word for a POSIX shell, so that a printed command line (a "Try:" hint, a replay line)
 * can be pasted back as it is, whatever the seed or file name contains.
 */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A whole command line from words, each quoted as needed. */
export function commandLine(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
