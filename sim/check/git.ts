import { execFileSync } from 'node:child_process';
import { PACKAGE_ROOT } from '../package-root.ts';

/** The repository this harness lives in (the package root: the checkout, or an installed package). */
export const REPO_ROOT = PACKAGE_ROOT;

export interface GitState {
  /** The full commit hash of HEAD, or undefined outside a git checkout (or without git). */
  commit: string | undefined;
  /** Tracked files differ from HEAD: a seed may not reproduce from the commit alone. */
  dirty: boolean;
}

/**
 * Where this build came from, read once per command. Counterexample files and reports record it, so a
 * failure found in CI can be replayed from the commit it names (STYLE: reports record seed and commit).
 */
export function gitState(): GitState {
  const commit = git(['rev-parse', 'HEAD']);
  if (commit === undefined || !/^[0-9a-f]{40}$/.test(commit)) return { commit: undefined, dirty: false };
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return { commit, dirty: status !== undefined && status !== '' };
}

function git(args: string[]): string | undefined {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}
