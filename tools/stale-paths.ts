import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Stale paths: every repository path that a tracked comment, doc, config or report names under one of
 * ROOTS must exist (tools/stale-paths.test.ts runs this over the repository). A mention is checked when
 * it has a file extension (`sim/world.ts`), ends in `/` (`sim/checkers/`), or is a glob or placeholder
 * (`src/**\/*.ts`, `tools/bench/<name>.ts`), which must match at least one existing file. A mention
 * must start at its root folder: `../src/x.ts` and `./x.ts` are relative imports, which the type checker
 * resolves already, and `dist/src/index.js` or `node_modules/x/src/y.js` are not repository paths.
 * Names that are not meant to exist (a test's made-up fixture paths, a path inside the build folder)
 * are listed one by one in ALLOWED, each with its reason; an entry that no longer matches a stale
 * mention fails too, so the list cannot outlive its reasons.
 */

export const ROOTS = ['src', 'sim', 'tools', 'properties', 'scenarios'] as const;

/** The tracked files that are read: sources, docs, configs and reports in text, and the CI scripts. */
export const SCANNED = /\.(?:ts|mjs|js|md|json|sh)$/;
const CI_SCRIPTS = '.ci/';

/** This file: the fixture paths listed in ALLOWED are named here on purpose. */
const ALLOW_LIST_FILE = 'tools/stale-paths.ts';

export interface Mention {
  line: number;
  path: string;
}

/** Mentions of a path that a file names on purpose although it does not exist. */
export interface Allowance {
  file: string;
  paths: readonly string[];
  reason: string;
}

export const ALLOWED: readonly Allowance[] = [
  {
    file: 'tools/stale-paths.test.ts',
    paths: ['src/no-such-module.ts', 'src/queue/*.json', 'tools/bench/<name>.js', 'src/iN-*.ts'],
    reason: "the matcher's own fixtures: a stale path and patterns that match nothing, which its unit tests must report",
  },
  {
    file: 'tools/stryker/score.test.ts',
    paths: ['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/empty.ts', 'src/a.test.ts', 'src/b.test.ts', 'src/gone.ts'],
    reason: 'fixture sources and Stryker reports of the merge tests, read through an injected reader',
  },
  {
    file: 'tools/stryker/batches.test.ts',
    paths: ['src/a.ts', 'src/b.ts', 'src/empty.ts', 'src/deleted.ts', 'src/dir/new-file.ts', 'src/a.test.ts', 'src/other.ts'],
    reason: 'fixture sources of the grouping tests, read through an injected reader',
  },
  {
    file: 'tools/coverage/unreached.test.ts',
    paths: ['src/x.ts'],
    reason: 'a fixture coverage entry for a made-up file',
  },
  {
    file: 'tools/mutants/catalogue.test.ts',
    paths: ['src/x.ts'],
    reason: 'a fixture mutant planted in a made-up file',
  },
  {
    file: 'sim/checkers/independence.test.ts',
    paths: ['sim/checkers/planted.ts', 'sim/expectations/planted.ts', 'sim/relay.ts'],
    reason: 'planted sources of the import checker, read through an injected reader',
  },
  {
    file: 'src/determinism.test.ts',
    paths: ['src/queue/planted.ts', 'sim/adapters/clock.ts', 'sim/check/tool.mjs', 'sim/check/tool.cjs'],
    reason: 'planted sources of the ambient-time checker, whose verdict depends on the path alone',
  },
  {
    file: 'sim/cli/cli.test.ts',
    paths: ['scenarios/nope.json'],
    reason: 'a scenario file that must not exist: the CLI is expected to say so',
  },
  {
    file: 'sim/check/scenario-file.test.ts',
    paths: ['scenarios/x.json'],
    reason: 'the display name given to a fixture scenario, expected back in the error message',
  },
  {
    file: 'tools/coverage/gate.ts',
    paths: ['sim/cli/main.js'],
    reason: 'joined to the build folder: the compiled sim/cli/main.ts',
  },
];

const SEGMENT = String.raw`(?:[\w.*-]|<[\w-]+>|\{[\w.,*-]+\})+`;
const MENTION = new RegExp(String.raw`(?<![\w./@$-])(?:${ROOTS.join('|')})/(?:${SEGMENT}/)*(?:${SEGMENT})?`, 'g');

/** Every mention of a path under ROOTS in `text` that is checked (see the file comment), with its line. */
export function pathMentions(text: string): Mention[] {
  const mentions: Mention[] = [];
  text.split('\n').forEach((content, index) => {
    for (const match of content.matchAll(MENTION)) {
      const path = match[0].replace(/\.+$/, '');
      if (isChecked(path)) mentions.push({ line: index + 1, path });
    }
  });
  return mentions;
}

function isChecked(path: string): boolean {
  const last = path.slice(path.lastIndexOf('/') + 1);
  return path.endsWith('/') || /\.[A-Za-z]\w*$/.test(last) || isPattern(path);
}

function isPattern(path: string): boolean {
  return /[*<{]/.test(path);
}

function patternRegExp(pattern: string): RegExp {
  // SEGMENT lets `<` in only as a placeholder and `{` only as a brace list, so these parts cover a pattern.
  const source = pattern.replace(/\*\*\/|\*\*|\*|<[\w-]+>|\{([^}]*)\}|[^*<{]+/g, (part: string, alternatives: string | undefined) => {
    if (part === '**/') return '(?:.*/)?';
    if (part === '**') return '.*';
    if (part === '*') return '[^/]*';
    if (part.startsWith('<')) return '[^/]+';
    if (alternatives !== undefined) return `(?:${alternatives.split(',').map(escape).join('|')})`;
    return escape(part);
  });
  return new RegExp(`^${source}$`);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whether `path` names an existing file or folder (`existing` holds folders with a trailing `/`); a pattern, whether it matches one. */
export function resolves(path: string, existing: ReadonlySet<string>): boolean {
  if (!isPattern(path)) return existing.has(path);
  const pattern = patternRegExp(path);
  for (const candidate of existing) if (pattern.test(candidate)) return true;
  return false;
}

export interface ScannedFile {
  file: string;
  text: string;
}

/** `file:line: path` for each stale mention not allowed, then each allowance that matched none. */
export function stalePaths(files: readonly ScannedFile[], existing: ReadonlySet<string>, allowed: readonly Allowance[] = ALLOWED): string[] {
  const keys = new Set(allowed.flatMap(({ file, paths }) => paths.map((path) => `${file}: ${path}`)));
  const unused = new Set(keys);
  const listed = new Set(allowed.flatMap(({ paths }) => paths));
  const found: string[] = [];
  for (const { file, text } of files) {
    for (const { line, path } of pathMentions(text)) {
      if (resolves(path, existing) || (file === ALLOW_LIST_FILE && listed.has(path))) continue;
      const key = `${file}: ${path}`;
      if (keys.has(key)) unused.delete(key);
      else found.push(`${file}:${line}: ${path}`);
    }
  }
  return [...found, ...[...unused].map((entry) => `allowed but not stale, drop it from ALLOWED: ${entry}`)];
}

/** Every file git lists (tracked, or new and not ignored) that is on disk, and every folder holding one (with `/`). */
export function existingPaths(root: string): Set<string> {
  const files = git(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']).filter((file) => existsSync(join(root, file)));
  const existing = new Set<string>();
  for (const file of files) {
    existing.add(file);
    for (let at = file.indexOf('/'); at !== -1; at = file.indexOf('/', at + 1)) existing.add(file.slice(0, at + 1));
  }
  return existing;
}

/** The tracked files that are read (SCANNED and the CI scripts), with their text. */
export function scannedFiles(root: string): ScannedFile[] {
  return git(root, ['ls-files', '-z'])
    .filter((file) => (SCANNED.test(file) || file.startsWith(CI_SCRIPTS)) && existsSync(join(root, file)))
    .map((file) => ({ file, text: readFileSync(join(root, file), 'utf8') }));
}

function git(root: string, args: string[]): string[] {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\0').filter(Boolean);
}
