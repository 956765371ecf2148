#!/usr/bin/env node
/**
 * After `tsc -p tsconfig.build.json`: removes from dist/ every declaration file (.d.ts) that no
 * declaration reachable from package.json's exports imports. The JavaScript stays whole (the CLI and the
 * worker processes load modules no public type names); only types nobody can reach go. Each file costs
 * the installed package a disk block at least, and about half of the declarations are the internals of
 * the simulator and the CLI. .ci/pack-check compiles strict consumers of every entry point against the
 * result, so a declaration pruned by mistake fails there.
 *
 * Usage: node tools/prune-declarations.mjs [packageDir]   (default: the current directory). It reports on
 * standard error: `npm pack --json` (prepack runs the build) keeps standard output for its JSON.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? '.');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** Every `types` file the exports name. */
function entryTypes(exports) {
  const out = [];
  const walk = (value) => {
    if (typeof value === 'string') return;
    for (const [key, inner] of Object.entries(value ?? {})) {
      if (key === 'types' && typeof inner === 'string') out.push(join(root, inner));
      else walk(inner);
    }
  };
  walk(exports);
  return out;
}

/** The relative module specifiers a declaration file imports, exports from, or references. */
const SPECIFIERS = [/\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g, /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g, /\bimport\s+['"](\.{1,2}\/[^'"]+)['"]/g, /\/\/\/\s*<reference\s+path=['"]([^'"]+)['"]/g];

function declarationOf(from, specifier) {
  const target = resolve(dirname(from), specifier);
  const candidates = [target.replace(/\.js$/, '.d.ts'), target.replace(/\.mjs$/, '.d.mts'), target.replace(/\.cjs$/, '.d.cts'), target.replace(/\.ts$/, '.d.ts'), `${target}.d.ts`, join(target, 'index.d.ts'), target];
  return candidates.find((file) => /\.d\.[mc]?ts$/.test(file) && existsSync(file));
}

const reachable = new Set();
const queue = entryTypes(pkg.exports);
for (const entry of queue) if (!existsSync(entry)) throw new Error(`prune-declarations: the exports name ${entry}, which the build did not write`);
while (queue.length > 0) {
  const file = queue.pop();
  if (reachable.has(file)) continue;
  reachable.add(file);
  const text = readFileSync(file, 'utf8');
  for (const pattern of SPECIFIERS) {
    for (const match of text.matchAll(pattern)) {
      const next = declarationOf(file, match[1]);
      if (next !== undefined && !reachable.has(next)) queue.push(next);
    }
  }
}

let removed = 0;
const sweep = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sweep(path);
    else if (/\.d\.[mc]?ts$/.test(entry.name) && !reachable.has(path)) {
      rmSync(path);
      removed += 1;
    }
  }
};
sweep(join(root, 'dist'));
console.error(`prune-declarations: kept ${reachable.size} declaration file(s) reachable from the exports, removed ${removed}`);
