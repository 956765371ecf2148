import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { plantedTexts, StaleSabotageError, type Sabotage } from './catalogue.ts';

/**
 * Copies of the project to plant a sabotage in: `npm run mutants` (run.ts) and the exit-code tests
 * (sim/cli/exit-codes.test.ts) run `leasehold check` inside them. A copy holds what the CLI needs to run
 * (src/, sim/, properties/, scenarios/, tools/, package.json, tsconfig.json) and links node_modules, so it
 * costs a couple of megabytes and no install. It has no .git, so a check there needs --seed.
 */
export const REPO = fileURLToPath(new URL('../../', import.meta.url));
const COPIED_DIRS = ['src', 'sim', 'properties', 'scenarios', 'tools'];
const COPIED_FILES = ['package.json', 'tsconfig.json'];

/** One snapshot of the working tree, taken once; every sabotage copies from it, so all see the same tree. */
export function snapshot(base: string): string {
  const pristine = join(base, 'pristine');
  mkdirSync(pristine, { recursive: true });
  for (const dir of COPIED_DIRS) {
    if (existsSync(join(REPO, dir))) cpSync(join(REPO, dir), join(pristine, dir), { recursive: true, filter: (source) => !source.includes('node_modules') });
  }
  for (const file of COPIED_FILES) cpSync(join(REPO, file), join(pristine, file));
  return pristine;
}

/** A runnable copy of the snapshot at `directory`, with node_modules linked to the repository's. */
export function copyOf(pristine: string, directory: string): string {
  cpSync(pristine, directory, { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(directory, 'node_modules'), 'dir');
  return directory;
}

/** Applies one sabotage in a copy, every edit of it in order; a find text that does not occur exactly once throws StaleSabotageError. */
export function plantSabotage(directory: string, entry: Pick<Sabotage, 'id' | 'file' | 'find' | 'replace' | 'also'>): void {
  const texts = plantedTexts(entry, (file) => {
    const path = join(directory, file);
    if (!existsSync(path)) throw new StaleSabotageError(entry.id, file, 0);
    return readFileSync(path, 'utf8');
  });
  for (const [file, text] of texts) writeFileSync(join(directory, file), text);
}
