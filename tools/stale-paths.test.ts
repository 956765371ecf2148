import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../sim/package-root.ts';
import { existingPaths, pathMentions, resolves, scannedFiles, stalePaths } from './stale-paths.ts';

const EXISTING = new Set(['src/', 'src/queue/', 'src/queue/claim.ts', 'src/queue/claim.test.ts', 'tools/', 'tools/bench/', 'tools/bench/main.ts']);

describe('the stale-path matcher', () => {
  const fixture = [
    '/** Claims are in src/queue/claim.ts; dead letters were in src/no-such-module.ts. */',
    'export const x = 1;',
  ].join('\n');

  it('reports the path that does not exist, with its file and line, and passes the one that does', () => {
    expect(pathMentions(fixture)).toEqual([
      { line: 1, path: 'src/queue/claim.ts' },
      { line: 1, path: 'src/no-such-module.ts' },
    ]);
    expect(stalePaths([{ file: 'fixture.ts', text: fixture }], EXISTING, [])).toEqual(['fixture.ts:1: src/no-such-module.ts']);
  });

  it('takes files with an extension and folders ending in /, drops trailing punctuation, and skips relative and foreign paths', () => {
    const text = 'See src/queue/claim.ts. Folders: `src/queue/`, (tools/bench/main.ts), src/queue and tools/x are names, not paths;\n' +
      "import '../src/queue/claim.ts', './sim/world.ts'; dist/src/index.js, node_modules/p/src/q.js, https://h/src/a.ts, @scope/src/b.ts";
    expect(pathMentions(text).map(({ path }) => path)).toEqual(['src/queue/claim.ts', 'src/queue/', 'tools/bench/main.ts']);
  });

  it('passes a glob or placeholder only when it matches an existing file', () => {
    for (const pattern of ['src/**/*.ts', 'src/**/*.test.ts', 'src/queue/*.test.ts', 'tools/bench/<name>.ts', 'src/queue/{claim,claim.test}.ts', 'src/**/queue/**']) {
      expect([pattern, resolves(pattern, EXISTING)]).toEqual([pattern, true]);
    }
    for (const pattern of ['sim/**/*.ts', 'src/queue/*.json', 'tools/bench/<name>.js', 'src/queue/{enqueue,run}.ts', 'src/iN-*.ts']) {
      expect([pattern, resolves(pattern, EXISTING)]).toEqual([pattern, false]);
    }
    expect(pathMentions('globs: src/**/*.ts, tools/bench/<name>.ts and src/queue/{claim,claim.test}.ts').map(({ path }) => path)).toEqual(['src/**/*.ts', 'tools/bench/<name>.ts', 'src/queue/{claim,claim.test}.ts']);
  });

  it('lets an allowance pass its own file only, and fails an allowance nothing needs', () => {
    const allowed = [
      { file: 'a.test.ts', paths: ['src/no-such-module.ts'], reason: 'fixture' },
      { file: 'b.md', paths: ['src/queue/claim.ts'], reason: 'exists, so never needed' },
    ];
    const files = [
      { file: 'a.test.ts', text: "const path = 'src/no-such-module.ts';" },
      { file: 'c.md', text: 'made up: src/no-such-module.ts' },
    ];
    expect(stalePaths(files, EXISTING, allowed)).toEqual(['c.md:1: src/no-such-module.ts', 'allowed but not stale, drop it from ALLOWED: b.md: src/queue/claim.ts']);
  });
});

describe('the repository', () => {
  it('names only paths under src/, sim/, tools/, properties/ and scenarios/ that exist, in every tracked comment, doc and report', () => {
    const files = scannedFiles(PACKAGE_ROOT);
    expect(files.length).toBeGreaterThan(100);
    expect(files.map(({ file }) => file)).toEqual(expect.arrayContaining(['README.md', 'reports/README.md', '.ci/run', 'sim/checkers/i6-bounded-retries.ts']));
    expect(stalePaths(files, existingPaths(PACKAGE_ROOT)).join('\n')).toBe('');
  });
});
