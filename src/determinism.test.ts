import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * S1: time and randomness reach src/ and sim/ only through the Clock and Random ports, the production
 * adapters, and the simulator's own event loop. Anything else would make a seed stop reproducing a run.
 */
const FORBIDDEN = /\bDate\.now\s*\(|\bnew Date\s*\(|\bperformance\.now\s*\(|\bMath\.random\s*\(|\brandomUUID\s*\(|\bsetTimeout\s*\(|\bsetInterval\s*\(/;
const ROOT = join(import.meta.dirname, '..');

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

/** Lines allowed to touch ambient time: production adapters, and lines that say why they may. */
function isExempt(path: string, line: string): boolean {
  return /\/adapters\//.test(path) || /\.test\.ts$/.test(path) || line.includes('// allow-ambient');
}

export function findAmbientLeaks(files: readonly string[], read: (path: string) => string): string[] {
  const leaks: string[] = [];
  for (const path of files) {
    read(path)
      .split('\n')
      .forEach((line, index) => {
        if (FORBIDDEN.test(line) && !isExempt(path, line)) leaks.push(`${relative(ROOT, path)}:${index + 1}: ${line.trim()}`);
      });
  }
  return leaks;
}

describe('S1 determinism guard', () => {
  it('finds no ambient time, randomness or timers in src/ or sim/', () => {
    const files = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'sim'))];
    expect(files.length).toBeGreaterThan(10);
    expect(findAmbientLeaks(files, (path) => readFileSync(path, 'utf8'))).toEqual([]);
  });

  it('catches each forbidden call outside an adapter', () => {
    const planted = ['Date.now()', 'new Date()', 'performance.now()', 'Math.random()', 'crypto.randomUUID()', 'setTimeout(f, 1)', 'setInterval(f, 1)'];
    for (const call of planted) {
      const leaks = findAmbientLeaks([join(ROOT, 'src/queue/planted.ts')], () => `const x = ${call};`);
      expect(leaks, call).toHaveLength(1);
    }
  });

  it('lets production adapters and marked lines through', () => {
    expect(findAmbientLeaks([join(ROOT, 'src/adapters/clock.ts')], () => 'return Date.now();')).toEqual([]);
    expect(findAmbientLeaks([join(ROOT, 'sim/event-loop.ts')], () => 'setTimeout(f); // allow-ambient: why')).toEqual([]);
  });
});
