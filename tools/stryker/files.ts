/**
 * Which files of the repository Stryker mutates (the `mutate` patterns of stryker.config.json, matched
 * the way Stryker matches them) and how many mutants each holds (Stryker's own instrumenter, without
 * running a test). Shared by the batch runner (batches.ts) and the merged score (score.ts).
 *
 * minimatch and @stryker-mutator/instrumenter are not direct dependencies: they are the packages
 * @stryker-mutator/core itself uses for exactly this, installed with it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { minimatch } from 'minimatch';
import { REPO_ROOT } from '../../sim/check/git.ts';

export const STRYKER_CONFIG = 'stryker.config.json';

/** The `mutate` patterns of stryker.config.json, in order (a leading `!` excludes). */
export function mutatePatterns(root: string = REPO_ROOT): string[] {
  const config = JSON.parse(readFileSync(join(root, STRYKER_CONFIG), 'utf8')) as { mutate?: unknown };
  if (!Array.isArray(config.mutate) || !config.mutate.every((pattern) => typeof pattern === 'string')) {
    throw new Error(`${STRYKER_CONFIG}: "mutate" must be a list of glob patterns`);
  }
  return config.mutate as string[];
}

/**
 * The files the patterns select, repository-relative with `/`, sorted. Like Stryker (ProjectReader):
 * patterns apply in order, each against the absolute path, hidden files never match, `!` removes.
 * Only the top-level directories the including patterns name are walked.
 */
export function mutatedFiles(root: string = REPO_ROOT, patterns: readonly string[] = mutatePatterns(root)): string[] {
  const absolute = (pattern: string) => resolve(root, pattern).split(sep).join('/');
  const tops = new Set(patterns.filter((pattern) => !pattern.startsWith('!')).map((pattern) => pattern.split('/')[0]!));
  const candidates: string[] = [];
  for (const top of tops) {
    const dir = join(root, top);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      candidates.push(relative(root, join(entry.parentPath, entry.name)).split(sep).join('/'));
    }
  }
  const selected = new Set<string>();
  for (const pattern of patterns) {
    const exclude = pattern.startsWith('!');
    const glob = absolute(exclude ? pattern.slice(1) : pattern);
    for (const file of candidates) {
      if (!minimatch(absolute(file), glob, { dot: false })) continue;
      if (exclude) selected.delete(file);
      else selected.add(file);
    }
  }
  return [...selected].sort();
}

/** How many mutants Stryker's instrumenter places in each file (default mutators, no ignorers). */
export async function countMutants(files: readonly string[], root: string = REPO_ROOT): Promise<Map<string, number>> {
  const { Instrumenter } = await import('@stryker-mutator/instrumenter');
  const quiet = () => undefined;
  const logger = {
    isTraceEnabled: () => false,
    isDebugEnabled: () => false,
    isInfoEnabled: () => false,
    isWarnEnabled: () => true,
    isErrorEnabled: () => true,
    isFatalEnabled: () => true,
    trace: quiet,
    debug: quiet,
    info: quiet,
    warn: (...args: unknown[]) => console.warn(...args),
    error: (...args: unknown[]) => console.error(...args),
    fatal: (...args: unknown[]) => console.error(...args),
  };
  const instrumenter = new Instrumenter(logger);
  const counts = new Map<string, number>();
  for (const file of files) {
    const content = readFileSync(join(root, file), 'utf8');
    const result = await instrumenter.instrument([{ name: join(root, file), content, mutate: true }], { plugins: null, excludedMutations: [], ignorers: [] });
    counts.set(file, result.mutants.length);
  }
  return counts;
}

/** The file's text now, or undefined when it no longer exists. */
export function currentSource(file: string, root: string = REPO_ROOT): string | undefined {
  const path = join(root, file);
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}
