/**
 * What each package entry loads at run time: its static import graph (type-only imports left out, dynamic
 * imports not followed: they load on first use), and the packages it reaches. `import 'leasehold'` must
 * reach no optional peer dependency (package.json peerDependenciesMeta), so a SQLite user needs none;
 * the harness's entries reach zod and seedrandom only through what loads on demand.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../sim/package-root.ts';
import pkg from '../package.json' with { type: 'json' };

/** `import ... from 'x'`, `export ... from 'x'` and `import 'x'`, each at the start of a line; `type` marks the type-only ones. */
const STATIC_IMPORT = /^(?:import|export)\s+(type\s+)?(?:(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?)\s+from\s+)?['"]([^'"]+)['"]/gm;

/** The packages (bare specifiers, node: built-ins left out) that loading `entry` loads, each with the chain of files that reaches it. */
function reachedPackages(entry: string): Map<string, string[]> {
  const reached = new Map<string, string[]>();
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    const here = [...chain, relative(PACKAGE_ROOT, file)];
    for (const match of readFileSync(file, 'utf8').matchAll(STATIC_IMPORT)) {
      const [, typeOnly, specifier] = match as unknown as [string, string | undefined, string];
      if (typeOnly !== undefined) continue;
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        if (existsSync(target)) walk(target, here);
      } else if (!specifier.startsWith('node:')) {
        const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string);
        if (!reached.has(name)) reached.set(name, here);
      }
    }
  };
  walk(join(PACKAGE_ROOT, entry), []);
  return reached;
}

const OPTIONAL = Object.keys(pkg.peerDependenciesMeta);

describe('what each entry loads', () => {
  it('the walker sees value imports, and not type-only ones', () => {
    const reached = reachedPackages('src/store/pg-driver.ts');
    expect([...reached.keys()]).toEqual([]);
    expect([...reachedPackages('src/store/sqlite-store.ts').keys()]).toEqual(['better-sqlite3']);
    expect([...reachedPackages('sim/scenario-schema.ts').keys()].sort()).toEqual(['better-sqlite3', 'seedrandom', 'zod']);
  });

  it('every optional peer dependency is also a devDependency (so the repository tests what loads it), and none is a dependency', () => {
    expect(OPTIONAL.sort()).toEqual(Object.keys(pkg.peerDependencies).sort());
    for (const name of OPTIONAL) {
      expect([name, name in pkg.devDependencies]).toEqual([name, true]);
      expect([name, name in pkg.dependencies]).toEqual([name, false]);
    }
  });

  for (const [entry, allowed] of [
    ['src/index.ts', ['better-sqlite3']],
    ['src/postgres.ts', ['better-sqlite3']],
    ['src/metrics.ts', []],
    ['sim/testing.ts', []],
    ['sim/cli/api.ts', ['better-sqlite3']],
    ['sim/cli/main.ts', ['better-sqlite3']],
    ['sim/testing-harness.ts', ['better-sqlite3', 'seedrandom', 'zod']],
    ['sim/cli/commands/check.ts', ['better-sqlite3', 'seedrandom', 'zod']],
    ['sim/cli/commands/work.ts', ['better-sqlite3']],
  ] as const) {
    it(`${entry} loads only ${allowed.length === 0 ? 'leasehold itself' : allowed.join(', ')}`, () => {
      const reached = reachedPackages(entry);
      const extra = [...reached].filter(([name]) => !(allowed as readonly string[]).includes(name)).map(([name, chain]) => `${name} <- ${chain.join(' > ')}`);
      expect(extra).toEqual([]);
    });
  }

  it('the entries package.json exports are the ones checked here', () => {
    expect(Object.fromEntries(Object.entries(pkg.exports).map(([key, value]) => [key, typeof value === 'string' ? value : value.default]))).toEqual({
      '.': './dist/src/index.js',
      './postgres': './dist/src/postgres.js',
      './metrics': './dist/src/metrics.js',
      './testing': './dist/sim/testing.js',
      './cli': './dist/sim/cli/api.js',
      './package.json': './package.json',
    });
  });
});
