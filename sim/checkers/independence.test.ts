import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { parse } from '@babel/parser';
import { describe, expect, it } from 'vitest';

/**
 * The judge is independent of the judged: no checker (sim/checkers) and no expectation
 * (sim/expectations) imports a value from src/. They restate the SPEC (spec-formulas.ts, spec-rules.ts)
 * so that a bug planted in src/ is not mirrored by the code that judges it. Types may come from src/
 * (`import type`, or `type` on each specifier): they carry no decision.
 *
 * The scan parses each file (Babel, with its TypeScript plugin), so text in strings and comments is
 * not mistaken for an import, and it sees every way a module is reached: static imports and their
 * specifiers, re-exports, side-effect imports, `import()`, `require()`, `import x = require()`, the
 * package's own name (`leasehold` is dist/src). A value imported from another sim/ module that only
 * re-exports it from src/ (sim/canonical-json.ts does) is followed to src/ and reported too. Test files
 * and test helpers (__test-helpers__) are not the judge: they may drive the real queue. A judge file
 * that imports a test helper or vitest is reported, since the judge ships and they do not.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const JUDGE_DIRECTORIES = ['sim/checkers', 'sim/expectations'];
const HELPERS = '__test-helpers__';
/** The package's own name: importing it imports src/ (package.json main: dist/src/index.js). */
const PACKAGE_NAME = 'leasehold';

interface AstNode {
  type: string;
  loc?: { start: { line: number } } | null;
  [key: string]: unknown;
}

type Read = (path: string) => string | undefined;

function isNode(value: unknown): value is AstNode {
  return typeof value === 'object' && value !== null && typeof (value as AstNode).type === 'string';
}

function* walk(node: AstNode): Generator<AstNode> {
  yield node;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'loc' || key.endsWith('Comments')) continue;
    for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) yield* walk(child);
  }
}

/** Parsed programs by source text: a module that many files import is parsed once. */
const parsed = new Map<string, AstNode>();

function parseModule(source: string): AstNode {
  let program = parsed.get(source);
  if (program === undefined) {
    program = parse(source, { sourceType: 'module', plugins: ['typescript'], errorRecovery: false }).program as unknown as AstNode;
    parsed.set(source, program);
  }
  return program;
}

function rel(path: string): string {
  return relative(ROOT, path).split(sep).join('/');
}

function inside(path: string, folder: string): boolean {
  const r = rel(path);
  return r === folder || r.startsWith(`${folder}/`);
}

/** Where a module specifier leads: 'src' (the judged), a file under the root, or nowhere we follow. */
function target(from: string, specifier: string, read: Read): { src: boolean; file?: string } {
  if (specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)) return { src: true };
  if (!specifier.startsWith('.') && !specifier.startsWith('/')) return { src: false };
  const path = resolve(dirname(from), specifier);
  if (inside(path, 'src')) return { src: true };
  const file = [path, `${path}.ts`, join(path, 'index.ts')].find((candidate) => read(candidate) !== undefined);
  return file === undefined ? { src: false } : { src: false, file };
}

function nameOf(node: AstNode | undefined): string {
  if (node === undefined) return 'default';
  return node.type === 'StringLiteral' ? (node.value as string) : (node.name as string);
}

/**
 * If `file`'s export `name` ('*': any of them) is a re-export from src/, the src/ specifier it came
 * from. Follows `export ... from` and `import` + `export { local }` chains through sim/ modules.
 */
function srcOrigin(file: string, name: string, read: Read, seen = new Set<string>()): string | undefined {
  if (seen.has(file) || !inside(file, 'sim')) return undefined;
  seen.add(file);
  const source = read(file);
  if (source === undefined) return undefined;
  let program: AstNode;
  try {
    program = parseModule(source);
  } catch {
    return undefined;
  }
  const imported = new Map<string, { specifier: string; name: string }>();
  for (const node of program.body as AstNode[]) {
    if (node.type !== 'ImportDeclaration' || node.importKind === 'type') continue;
    for (const s of node.specifiers as AstNode[]) {
      if (s.importKind === 'type') continue;
      const original = s.type === 'ImportSpecifier' ? nameOf(s.imported as AstNode) : s.type === 'ImportNamespaceSpecifier' ? '*' : 'default';
      imported.set((s.local as AstNode).name as string, { specifier: (node.source as AstNode).value as string, name: original });
    }
  }
  const follow = (specifier: string, original: string): string | undefined => {
    const next = target(file, specifier, read);
    if (next.src) return specifier;
    return next.file === undefined ? undefined : srcOrigin(next.file, original, read, seen);
  };
  for (const node of program.body as AstNode[]) {
    if (node.exportKind === 'type') continue;
    const from = isNode(node.source) ? (node.source.value as string) : undefined;
    if (node.type === 'ExportAllDeclaration' && from !== undefined) {
      const origin = follow(from, name);
      if (origin !== undefined) return origin;
    }
    if (node.type !== 'ExportNamedDeclaration') continue;
    for (const s of (node.specifiers as AstNode[] | undefined) ?? []) {
      if (s.exportKind === 'type') continue;
      const exported = nameOf(s.exported as AstNode);
      if (name !== '*' && exported !== name) continue;
      const local = s.type === 'ExportNamespaceSpecifier' ? '*' : nameOf(s.local as AstNode);
      const via = from !== undefined ? { specifier: from, name: local } : imported.get(local);
      const origin = via === undefined ? undefined : follow(via.specifier, via.name);
      if (origin !== undefined) return origin;
    }
  }
  return undefined;
}

/** Every value the file takes from src/ (directly, or through a sim/ module that re-exports it). */
export function findDecisionImports(files: readonly string[], read: Read): string[] {
  const found: string[] = [];
  for (const file of files) {
    const source = read(file);
    const at = (node: AstNode) => `${rel(file)}:${node.loc?.start.line ?? 0}`;
    let program: AstNode;
    try {
      program = parseModule(source ?? '');
    } catch (error) {
      found.push(`${rel(file)}: cannot parse, so its imports cannot be checked: ${(error as Error).message}`);
      continue;
    }
    const judge = (node: AstNode, specifier: string, names: string[], how: string) => {
      if (specifier === 'vitest' || specifier.split('/').includes(HELPERS)) {
        found.push(`${at(node)}: ${how} ${specifier}, a test-only module, into the judge`);
        return;
      }
      const next = target(file, specifier, read);
      if (next.src) {
        found.push(`${at(node)}: ${how} ${names.length === 0 ? 'nothing (it runs src/ for its side effects)' : names.join(', ')} from ${specifier}`);
        return;
      }
      if (next.file === undefined) return;
      for (const name of names) {
        const origin = srcOrigin(next.file, name.replace(/^\* as .*/, '*'), read);
        if (origin !== undefined) found.push(`${at(node)}: ${how} ${name} from ${specifier}, which re-exports it from ${origin}`);
      }
    };
    for (const node of walk(program)) {
      const from = isNode(node.source) && node.source.type === 'StringLiteral' ? (node.source.value as string) : undefined;
      if (node.type === 'ImportDeclaration' && node.importKind !== 'type') {
        const values = (node.specifiers as AstNode[]).filter((s) => s.importKind !== 'type');
        if (values.length === 0 && (node.specifiers as AstNode[]).length > 0) continue;
        const names = values.map((s) => (s.type === 'ImportSpecifier' ? nameOf(s.imported as AstNode) : s.type === 'ImportNamespaceSpecifier' ? `* as ${nameOf(s.local as AstNode)}` : 'default'));
        judge(node, from as string, names, 'imports');
      } else if (node.type === 'ExportNamedDeclaration' && from !== undefined && node.exportKind !== 'type') {
        const names = (node.specifiers as AstNode[]).filter((s) => s.exportKind !== 'type').map((s) => (s.type === 'ExportNamespaceSpecifier' ? '*' : nameOf(s.local as AstNode)));
        if (names.length > 0) judge(node, from, names, 're-exports');
      } else if (node.type === 'ExportAllDeclaration' && from !== undefined && node.exportKind !== 'type') {
        judge(node, from, ['*'], 're-exports');
      } else if (node.type === 'TSImportEqualsDeclaration' && node.importKind !== 'type') {
        const reference = node.moduleReference as AstNode;
        if (reference.type === 'TSExternalModuleReference') judge(node, (reference.expression as AstNode).value as string, ['* as ' + nameOf(node.id as AstNode)], 'imports');
      } else if (node.type === 'ImportExpression' || (node.type === 'CallExpression' && ((node.callee as AstNode).type === 'Import' || ((node.callee as AstNode).type === 'Identifier' && (node.callee as AstNode).name === 'require')))) {
        const argument = node.type === 'ImportExpression' ? (node.source as AstNode) : (node.arguments as AstNode[])[0];
        if (argument?.type === 'StringLiteral') judge(node, argument.value as string, ['*'], 'loads');
        else found.push(`${at(node)}: loads a module computed at run time, which this scan cannot follow`);
      }
    }
  }
  return found;
}

function judgeFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return name === HELPERS ? [] : judgeFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

const readDisk: Read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
};

/** The scan over one planted file (its siblings read from disk). */
const planted = (source: string, path = 'sim/checkers/planted.ts') => {
  const file = join(ROOT, path);
  return findDecisionImports([file], (p) => (p === file ? source : readDisk(p)));
};

describe('the judge is independent of the judged', () => {
  it('no checker or expectation imports a value from src/', () => {
    const files = JUDGE_DIRECTORIES.flatMap((directory) => judgeFiles(join(ROOT, directory)));
    const names = files.map(rel);
    expect(names).toEqual(expect.arrayContaining(['sim/checkers/timeline.ts', 'sim/checkers/spec-rules.ts', 'sim/checkers/i11-no-lost-task.ts', 'sim/expectations/index.ts']));
    // Tests and test helpers are not the judge: they may run the real queue.
    expect(names.filter((name) => name.endsWith('.test.ts') || name.includes(HELPERS))).toEqual([]);
    expect(findDecisionImports(files, readDisk)).toEqual([]);
  });

  it.each([
    ["import { TRANSITIONS } from '../../src/queue/states.ts';", 'imports TRANSITIONS from ../../src/queue/states.ts'],
    ["import { type TaskState, LIVE_STATES } from '../../src/queue/states.ts';", 'imports LIVE_STATES from'],
    ["import { TaskState } from '../../src/queue/types.ts';", 'imports TaskState from'],
    ["import { resolveConfig as resolve } from '../../src/queue/config.ts';", 'imports resolveConfig from'],
    ["import * as states from '../../src/queue/states.ts';", 'imports * as states from'],
    ["import config from '../../src/queue/config.ts';", 'imports default from'],
    ["import '../../src/queue/states.ts';", 'imports nothing (it runs src/ for its side effects)'],
    ["import {} from '../../src/queue/states.ts';", 'imports nothing'],
    ["export { resolveConfig } from '../../src/queue/config.ts';", 're-exports resolveConfig from'],
    ["export * from '../../src/queue/states.ts';", 're-exports * from'],
    ["export * as states from '../../src/queue/states.ts';", 're-exports * from'],
    ["const { requestKey } = await import('../../src/worker/fingerprint.ts');", 'loads * from ../../src/worker/fingerprint.ts'],
    ["const states = require('../../src/queue/states.ts');", 'loads * from'],
    ["import states = require('../../src/queue/states.ts');", 'imports * as states from'],
    ["const m = await import(path);", 'a module computed at run time'],
    ["import { requestKey } from 'leasehold';", 'imports requestKey from leasehold'],
    ["function f() { return import('../../src/queue/states.ts'); }", 'loads * from'],
    // Through a sim/ module that only re-exports src/.
    ["import { canonicalJson } from '../canonical-json.ts';", 'imports canonicalJson from ../canonical-json.ts, which re-exports it from ../src/canonical-json.ts'],
    ["import * as json from '../canonical-json.ts';", 'which re-exports it from ../src/canonical-json.ts'],
    // Test-only modules do not belong in the judge.
    ["import { expect } from 'vitest';", 'a test-only module'],
    ["import { realRun } from './__test-helpers__/real-run.ts';", 'a test-only module'],
  ])('reports %s', (source, message) => {
    const found = planted(source);
    expect(found, source).toHaveLength(1);
    expect(found[0]).toContain(message);
    expect(found[0]).toMatch(/^sim\/checkers\/planted\.ts:1: /);
  });

  it.each([
    "import type { TaskState } from '../../src/queue/types.ts';",
    "import { type TaskState, type TaskView } from '../../src/queue/types.ts';",
    "export type { QueueConfig } from '../../src/queue/types.ts';",
    "export { type QueueConfig } from '../../src/queue/types.ts';",
    "type Config = import('../../src/queue/types.ts').QueueConfig;",
    "import type { JsonValue } from '../canonical-json.ts';",
    "import { type JsonValue } from '../canonical-json.ts';",
    "import { World } from '../world.ts';",
    "import { WRITE_TOOLS } from '../actors/tools.ts';",
    "import { specScore } from './spec-formulas.ts';",
    "import { z } from 'zod';",
    "import { createHash } from 'node:crypto';",
    "const text = \"import { TRANSITIONS } from '../../src/queue/states.ts'\";",
    "// import { TRANSITIONS } from '../../src/queue/states.ts';",
  ])('lets %s through', (source) => {
    expect(planted(source), source).toEqual([]);
  });

  it('names the file and line of each import, in expectations too', () => {
    const source = "import { z } from 'zod';\nimport { LIVE_STATES, TERMINAL_STATES } from '../../src/queue/states.ts';\n";
    expect(planted(source, 'sim/expectations/planted.ts')).toEqual(['sim/expectations/planted.ts:2: imports LIVE_STATES, TERMINAL_STATES from ../../src/queue/states.ts']);
  });

  it('follows a re-export through a chain of sim/ modules', () => {
    const checker = join(ROOT, 'sim/checkers/planted.ts');
    const relay = join(ROOT, 'sim/relay.ts');
    const files: Record<string, string> = {
      [checker]: "import { isTerminal } from '../relay.ts';",
      [relay]: "import { isTerminal as terminal } from '../src/queue/states.ts';\nexport { terminal as isTerminal };",
    };
    expect(findDecisionImports([checker], (p) => files[p] ?? readDisk(p))).toEqual(['sim/checkers/planted.ts:1: imports isTerminal from ../relay.ts, which re-exports it from ../src/queue/states.ts']);
  });

  it('fails a file it cannot parse instead of skipping it', () => {
    expect(planted('import { = from;')).toEqual([expect.stringMatching(/^sim\/checkers\/planted\.ts: cannot parse/)]);
  });
});
