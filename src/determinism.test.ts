import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from '@babel/parser';
import { describe, expect, it } from 'vitest';

/**
 * S1: time and randomness reach src/ and sim/ only through the Clock and Random ports, the production
 * adapters, and the simulator's own event loop. Anything else would make a seed stop reproducing a run.
 *
 * The guard parses every file (Babel, with its TypeScript plugin) instead of matching lines, so an alias
 * (`const now = Date.now`, `const { now } = Date`, `const g = globalThis; g.setTimeout(f)`), a computed
 * access (`globalThis['setTimeout']`, `performance['now']`), a call without parentheses (`new Date`) or an
 * import (`import { randomUUID } from 'node:crypto'`) is caught as well as the plain call, while text in
 * strings and comments is not mistaken for code. Names are resolved through the file's lexical scopes: a
 * local `window` generator or a `const window = ...` is not the browser global.
 */
const ROOT = join(import.meta.dirname, '..');

/** An ambient object: reading some of its members (or calling it) reads time or OS randomness. */
type Ambient = 'Date' | 'performance' | 'Math' | 'webCrypto' | 'nodeCrypto' | 'timers' | 'perfHooks' | 'global';
/** What an expression evaluates to, as far as S1 cares: an ambient object, a leak (a clock, a timer, a random source), or nothing. */
type Value = Ambient | 'leak' | null;

const GLOBALS: Record<string, Value> = {
  Date: 'Date',
  performance: 'performance',
  Math: 'Math',
  crypto: 'webCrypto',
  setTimeout: 'leak',
  setInterval: 'leak',
  globalThis: 'global',
  window: 'global',
  global: 'global',
  self: 'global',
};

const MEMBERS: Record<Ambient, Record<string, Value>> = {
  // `Date.call()` and friends return the current time as a string, like `Date()`.
  Date: { now: 'leak', call: 'leak', apply: 'leak', bind: 'leak' },
  performance: { now: 'leak', timeOrigin: 'leak' },
  Math: { random: 'leak' },
  webCrypto: { randomUUID: 'leak', getRandomValues: 'leak' },
  nodeCrypto: {
    randomUUID: 'leak', getRandomValues: 'leak', randomBytes: 'leak', randomInt: 'leak', randomFill: 'leak',
    randomFillSync: 'leak', pseudoRandomBytes: 'leak', webcrypto: 'webCrypto', default: 'nodeCrypto',
  },
  timers: { setTimeout: 'leak', setInterval: 'leak', scheduler: 'leak', promises: 'timers', default: 'timers' },
  perfHooks: { performance: 'performance', default: 'perfHooks' },
  global: { ...GLOBALS },
};

const MODULES: Record<string, Ambient> = {
  crypto: 'nodeCrypto', 'node:crypto': 'nodeCrypto',
  timers: 'timers', 'node:timers': 'timers', 'timers/promises': 'timers', 'node:timers/promises': 'timers',
  perf_hooks: 'perfHooks', 'node:perf_hooks': 'perfHooks',
};

/** Babel's nodes, seen structurally: the guard only needs the type, the position and the children. */
interface AstNode {
  type: string;
  start?: number | null;
  end?: number | null;
  loc?: { start: { line: number; column: number } } | null;
  [key: string]: unknown;
}

type Binding = { value: Value } | { init: AstNode; scope: Scope };

interface Scope {
  parent: Scope | null;
  bindings: Map<string, Binding>;
}

/** Expression wrappers that change only the static type; the guard looks through them. */
const WRAPPERS = new Set(['TSAsExpression', 'TSSatisfiesExpression', 'TSNonNullExpression', 'TSTypeAssertion', 'TSInstantiationExpression', 'ParenthesizedExpression']);
/** TypeScript nodes that hold runtime code; every other TS node is a type and is skipped. */
const TS_RUNTIME = new Set(['TSEnumDeclaration', 'TSEnumBody', 'TSEnumMember', 'TSModuleDeclaration', 'TSModuleBlock', 'TSExportAssignment', 'TSParameterProperty']);
const FUNCTIONS = new Set(['FunctionDeclaration', 'FunctionExpression', 'ArrowFunctionExpression', 'ObjectMethod', 'ClassMethod', 'ClassPrivateMethod']);
const PROPERTIES = new Set(['ObjectProperty', 'ObjectMethod', 'ClassProperty', 'ClassMethod', 'ClassPrivateProperty', 'ClassPrivateMethod', 'ClassAccessorProperty', 'TSDeclareMethod']);

function isNode(value: unknown): value is AstNode {
  return typeof value === 'object' && value !== null && typeof (value as AstNode).type === 'string';
}

function children(node: AstNode): Array<[string, AstNode]> {
  const out: Array<[string, AstNode]> = [];
  for (const [key, value] of Object.entries(node)) {
    if (key === 'loc' || key === 'leadingComments' || key === 'trailingComments' || key === 'innerComments') continue;
    for (const child of Array.isArray(value) ? value : [value]) if (isNode(child)) out.push([key, child]);
  }
  return out;
}

function unwrap(node: AstNode): AstNode {
  let inner = node;
  while (WRAPPERS.has(inner.type)) inner = inner.expression as AstNode;
  return inner;
}

/** The name of a member or property key when it is known without running the code, else undefined. */
function staticName(key: AstNode, computed: boolean): string | undefined {
  if (!computed && (key.type === 'Identifier' || key.type === 'PrivateName')) return key.type === 'Identifier' ? (key.name as string) : undefined;
  if (key.type === 'StringLiteral') return key.value as string;
  if (key.type === 'TemplateLiteral' && (key.expressions as unknown[]).length === 0) return ((key.quasis as AstNode[])[0]?.value as { cooked: string }).cooked;
  return undefined;
}

function patternNames(pattern: AstNode | null | undefined, out: string[] = []): string[] {
  if (!pattern) return out;
  const node = unwrap(pattern);
  if (node.type === 'Identifier') out.push(node.name as string);
  else if (node.type === 'ObjectPattern') for (const p of node.properties as AstNode[]) patternNames(p.type === 'RestElement' ? p : (p.value as AstNode), out);
  else if (node.type === 'ArrayPattern') for (const e of node.elements as Array<AstNode | null>) patternNames(e, out);
  else if (node.type === 'RestElement') patternNames(node.argument as AstNode, out);
  else if (node.type === 'AssignmentPattern') patternNames(node.left as AstNode, out);
  else if (node.type === 'TSParameterProperty') patternNames(node.parameter as AstNode, out);
  return out;
}

function lookup(scope: Scope | null, name: string): Binding | undefined {
  for (let s = scope; s; s = s.parent) {
    const binding = s.bindings.get(name);
    if (binding) return binding;
  }
  return undefined;
}

/** What an expression evaluates to, following aliases declared as `const x = <expression>`. */
function evaluate(expression: AstNode, scope: Scope, seen = new Set<AstNode>()): Value {
  const node = unwrap(expression);
  switch (node.type) {
    case 'Identifier': {
      const binding = lookup(scope, node.name as string);
      if (!binding) return GLOBALS[node.name as string] ?? null;
      if ('value' in binding) return binding.value;
      if (seen.has(binding.init)) return null;
      seen.add(binding.init);
      const value = evaluate(binding.init, binding.scope, seen);
      // A leak in an alias's initialiser is reported there, once; the alias itself is then plain.
      return value === 'leak' ? null : value;
    }
    case 'MemberExpression':
    case 'OptionalMemberExpression': {
      const object = evaluate(node.object as AstNode, scope, seen);
      if (object === 'leak') return 'leak';
      if (object === null) return null;
      const name = staticName(node.property as AstNode, node.computed as boolean);
      // A key computed at run time on an ambient object could be any of its members.
      return name === undefined ? 'leak' : (MEMBERS[object][name] ?? null);
    }
    case 'CallExpression':
    case 'ImportExpression': {
      const callee = node.type === 'ImportExpression' ? null : (node.callee as AstNode);
      const isLoader = callee === null || callee.type === 'Import' || (callee.type === 'Identifier' && callee.name === 'require' && !lookup(scope, 'require'));
      const source = node.type === 'ImportExpression' ? (node.source as AstNode) : (node.arguments as AstNode[])[0];
      return isLoader && source?.type === 'StringLiteral' ? (MODULES[source.value as string] ?? null) : null;
    }
    case 'AwaitExpression':
      return evaluate(node.argument as AstNode, scope, seen);
    case 'SequenceExpression':
      return evaluate((node.expressions as AstNode[]).at(-1) as AstNode, scope, seen);
    case 'ConditionalExpression':
    case 'LogicalExpression': {
      const [a, b] = node.type === 'LogicalExpression' ? [node.left, node.right] : [node.consequent, node.alternate];
      const values = [evaluate(a as AstNode, scope, seen), evaluate(b as AstNode, scope, seen)];
      return values.includes('leak') ? 'leak' : (values.find((v) => v !== null) ?? null);
    }
    default:
      return null;
  }
}

/** Declares the names a scope-creating node introduces directly (params, its own statements' declarations). */
function declare(scope: Scope, node: AstNode): void {
  const plain = (name: string) => scope.bindings.set(name, { value: null });
  if (FUNCTIONS.has(node.type)) {
    for (const param of node.params as AstNode[]) patternNames(param).forEach(plain);
    if (node.type === 'FunctionExpression' && node.id) plain((node.id as AstNode).name as string);
  }
  if (node.type === 'CatchClause') patternNames(node.param as AstNode | null).forEach(plain);
  const statements: AstNode[] = [];
  if (node.type === 'Program' || node.type === 'BlockStatement' || node.type === 'StaticBlock' || node.type === 'TSModuleBlock') statements.push(...(node.body as AstNode[]));
  if (node.type === 'SwitchStatement') for (const c of node.cases as AstNode[]) statements.push(...(c.consequent as AstNode[]));
  for (const key of ['init', 'left']) if (isNode(node[key]) && (node[key] as AstNode).type === 'VariableDeclaration') statements.push(node[key] as AstNode);
  for (const raw of statements) {
    const statement = (raw.type === 'ExportNamedDeclaration' || raw.type === 'ExportDefaultDeclaration') && isNode(raw.declaration) ? raw.declaration : raw;
    if (statement.type === 'VariableDeclaration') {
      for (const d of statement.declarations as AstNode[]) {
        const id = unwrap(d.id as AstNode);
        if (id.type === 'Identifier' && isNode(d.init)) scope.bindings.set(id.name as string, { init: d.init, scope });
        else patternNames(id).forEach(plain);
      }
    } else if (/^(FunctionDeclaration|ClassDeclaration|TSEnumDeclaration|TSModuleDeclaration)$/.test(statement.type) && isNode(statement.id) && statement.id.type === 'Identifier') {
      plain(statement.id.name as string);
    } else if (statement.type === 'ImportDeclaration' && statement.importKind !== 'type') {
      const module = MODULES[(statement.source as AstNode).value as string];
      for (const s of statement.specifiers as AstNode[]) {
        const local = (s.local as AstNode).name as string;
        if (s.importKind === 'type') continue;
        if (!module) plain(local);
        else if (s.type === 'ImportSpecifier') scope.bindings.set(local, { value: MEMBERS[module][staticName(s.imported as AstNode, false) as string] ?? null });
        else scope.bindings.set(local, { value: module });
      }
    } else if (statement.type === 'TSImportEqualsDeclaration') {
      const reference = statement.moduleReference as AstNode;
      const source = reference.type === 'TSExternalModuleReference' ? ((reference.expression as AstNode).value as string) : undefined;
      scope.bindings.set((statement.id as AstNode).name as string, { value: (source && MODULES[source]) || null });
    }
  }
}

/** Whether an ambient object may stand here: only where it is read for a harmless member, or bound to a tracked alias. */
function allowedUse(ambient: Ambient, parent: AstNode | null, key: string): boolean {
  if (!parent) return false;
  if ((parent.type === 'MemberExpression' || parent.type === 'OptionalMemberExpression') && key === 'object') return true;
  if (parent.type === 'UnaryExpression' && parent.operator === 'typeof') return true;
  // `new Date(epochMs)` formats a given time; `new Date()`, `new Date` and `new Date(...[])` read the clock.
  if (ambient === 'Date' && parent.type === 'NewExpression' && key === 'callee') {
    const args = parent.arguments as AstNode[];
    return args.length > 0 && args.every((a) => a.type !== 'SpreadElement');
  }
  if (ambient === 'Date' && parent.type === 'BinaryExpression' && parent.operator === 'instanceof' && key === 'right') return true;
  const target = parent.type === 'VariableDeclarator' && key === 'init' ? (parent.id as AstNode) : parent.type === 'AssignmentExpression' && key === 'right' ? (parent.left as AstNode) : undefined;
  if (!target) return false;
  const pattern = unwrap(target);
  if (pattern.type === 'Identifier') return parent.type === 'VariableDeclarator';
  // Destructuring is fine only when every name taken is a harmless member: `const { floor } = Math`.
  return pattern.type === 'ObjectPattern' && (pattern.properties as AstNode[]).every((p) => {
    const name = p.type === 'ObjectProperty' ? staticName(p.key as AstNode, p.computed as boolean) : undefined;
    return name !== undefined && (MEMBERS[ambient][name] ?? null) === null;
  });
}

function passesContext(node: AstNode, childKey: string, child: AstNode): boolean {
  if (node.type === 'AwaitExpression') return childKey === 'argument';
  if (node.type === 'LogicalExpression') return childKey === 'left' || childKey === 'right';
  if (node.type === 'ConditionalExpression') return childKey === 'consequent' || childKey === 'alternate';
  if (node.type === 'SequenceExpression') return (node.expressions as AstNode[]).at(-1) === child;
  return false;
}

interface Found {
  node: AstNode;
  reason: string;
}

/** Walks one file and returns each expression that reads ambient time, randomness or a timer. */
function scan(program: AstNode): Found[] {
  const found: Found[] = [];
  const global: Scope = { parent: null, bindings: new Map() };

  const visitPattern = (pattern: AstNode | null | undefined, scope: Scope): void => {
    if (!pattern) return;
    const node = unwrap(pattern);
    if (node.type === 'Identifier') return;
    if (node.type === 'ObjectPattern') {
      for (const p of node.properties as AstNode[]) {
        if (p.type === 'RestElement') visitPattern(p.argument as AstNode, scope);
        else {
          if (p.computed) visit(p.key as AstNode, p, 'key', scope);
          visitPattern(p.value as AstNode, scope);
        }
      }
    } else if (node.type === 'ArrayPattern') (node.elements as Array<AstNode | null>).forEach((e) => visitPattern(e, scope));
    else if (node.type === 'RestElement') visitPattern(node.argument as AstNode, scope);
    else if (node.type === 'AssignmentPattern') {
      visitPattern(node.left as AstNode, scope);
      visit(node.right as AstNode, node, 'right', scope);
    } else if (node.type === 'TSParameterProperty') visitPattern(node.parameter as AstNode, scope);
    else visit(node, null, 'target', scope); // a member expression as an assignment target
  };

  const visit = (raw: AstNode, parent: AstNode | null, key: string, outer: Scope): void => {
    const node = unwrap(raw);
    if (node.type.startsWith('TS') && !TS_RUNTIME.has(node.type)) return;
    if (node.type === 'ImportDeclaration' || node.type === 'ExportNamedDeclaration' || node.type === 'ExportAllDeclaration') {
      if (checkModuleSpecifiers(node)) return;
    }
    const value = evaluate(node, outer);
    if (value === 'leak') return void found.push({ node, reason: 'reads time, randomness or a timer' });
    if (value !== null && !allowedUse(value, parent, key)) return void found.push({ node, reason: `uses ${value} as a value (an alias S1 cannot follow)` });

    const scope = /^(Program|BlockStatement|StaticBlock|SwitchStatement|CatchClause|ForStatement|ForInStatement|ForOfStatement|TSModuleBlock)$/.test(node.type) || FUNCTIONS.has(node.type)
      ? { parent: outer, bindings: new Map<string, Binding>() }
      : outer;
    if (scope !== outer) declare(scope, node);

    if (node.type === 'ImportDeclaration') return;
    for (const [childKey, child] of children(node)) {
      const computed = node.computed === true;
      const isPattern = (FUNCTIONS.has(node.type) && childKey === 'params') || (node.type === 'CatchClause' && childKey === 'param')
        || (node.type === 'VariableDeclarator' && childKey === 'id') || (node.type === 'AssignmentExpression' && childKey === 'left')
        || (/^For(In|Of)Statement$/.test(node.type) && childKey === 'left' && child.type !== 'VariableDeclaration');
      if (isPattern) visitPattern(child, scope);
      else if ((node.type === 'MemberExpression' || node.type === 'OptionalMemberExpression') && childKey === 'property' && !computed) continue;
      else if (PROPERTIES.has(node.type) && childKey === 'key' && !computed) continue;
      else if (/^(label|id|typeAnnotation|returnType|typeParameters)$/.test(childKey) || (node.type === 'ExportSpecifier' && childKey === 'exported')) continue;
      // The value of `await x`, of `a ?? x`, `c ? a : x` and `(a, x)` stands where the whole expression stands.
      else if (passesContext(node, childKey, child)) visit(child, parent, key, scope);
      else visit(child, node, childKey, scope);
    }
  };

  /** `import { randomUUID } from 'node:crypto'` and `export { setTimeout } from 'node:timers'` leak at the specifier. */
  const checkModuleSpecifiers = (node: AstNode): boolean => {
    const module = isNode(node.source) ? MODULES[node.source.value as string] : undefined;
    if (!module || node.importKind === 'type' || node.exportKind === 'type') return false;
    if (node.type === 'ExportAllDeclaration') found.push({ node, reason: `re-exports all of ${module}` });
    for (const s of (node.specifiers as AstNode[] | undefined) ?? []) {
      if (s.importKind === 'type' || s.exportKind === 'type') continue;
      const name = s.type === 'ImportSpecifier' ? staticName(s.imported as AstNode, false) : s.type === 'ExportSpecifier' ? staticName(s.local as AstNode, false) : 'default';
      const value = MEMBERS[module][name as string] ?? null;
      if (value === 'leak' || (node.type !== 'ImportDeclaration' && value !== null)) found.push({ node: s, reason: `imports ${name} from ${module}` });
    }
    return true;
  };

  visit(program, null, 'program', global);
  return found;
}

/** A leak may stay only on a line that says why: `// allow-ambient: the reason`. */
const MARK = /^\s*allow-ambient:\s*\S/;

function isExemptFile(relativePath: string): boolean {
  return relativePath.startsWith('src/adapters/') || relativePath.endsWith('.test.ts');
}

export function findAmbientLeaks(files: readonly string[], read: (path: string) => string): string[] {
  const leaks: string[] = [];
  for (const path of files) {
    const name = relative(ROOT, path);
    if (isExemptFile(name)) continue;
    const source = read(path);
    let file;
    try {
      file = parse(source, {
        sourceType: path.endsWith('.cjs') ? 'script' : 'module',
        plugins: path.endsWith('.ts') ? ['typescript'] : [],
        errorRecovery: false,
      });
    } catch (error) {
      leaks.push(`${name}: cannot parse, so S1 cannot be checked: ${(error as Error).message}`);
      continue;
    }
    const markedLines = new Set(file.comments?.filter((c) => c.type === 'CommentLine' && MARK.test(c.value)).map((c) => c.loc?.start.line));
    for (const { node, reason } of scan(file.program as unknown as AstNode)) {
      const line = node.loc?.start.line ?? 0;
      if (markedLines.has(line)) continue;
      const text = source.slice(node.start ?? 0, node.end ?? 0).split('\n')[0]?.trim();
      leaks.push(`${name}:${line}: ${text} (${reason})`);
    }
  }
  return leaks;
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory).flatMap((name) => {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

const planted = (source: string, path = 'src/queue/planted.ts') => findAmbientLeaks([join(ROOT, path)], () => source);

describe('S1 determinism guard', () => {
  it('finds no ambient time, randomness or timers in src/ or sim/', () => {
    const files = [...sourceFiles(join(ROOT, 'src')), ...sourceFiles(join(ROOT, 'sim'))];
    expect(files.length).toBeGreaterThan(10);
    // The walk reaches every kind of file S1 covers, the simulator's event loop included.
    expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['sim/event-loop.ts', 'sim/check/worker-bootstrap.mjs', 'src/work-queue.ts']));
    expect(findAmbientLeaks(files, (path) => readFileSync(path, 'utf8'))).toEqual([]);
  });

  it.each([
    // The plain calls S1 names.
    'Date.now()', 'new Date()', 'performance.now()', 'Math.random()', 'crypto.randomUUID()', 'setTimeout(f, 1)', 'setInterval(f, 1)',
    // References without a call, and destructuring.
    'const now = Date.now;', 'const { now } = Date;', 'const r = Math.random;', 'const { random } = Math;', 'const t = setTimeout;',
    'later({ setTimeout });', 'const p = performance.now;', 'performance.timeOrigin;',
    // Computed access and the global object under its four names.
    "Date['now']();", 'Date[`now`]();', "performance['now']();", "Math['random']();", "globalThis['setTimeout'](f, 1);", 'globalThis.setTimeout(f, 1);',
    'window.setTimeout(f, 1);', 'global.setInterval(f, 1);', 'self.setTimeout(f, 1);', 'globalThis[name](f);', 'globalThis.Date.now();',
    'new globalThis.Date();', 'const { setTimeout: later } = globalThis;', 'globalThis.crypto.randomUUID();', 'crypto.getRandomValues(buffer);',
    // Date read without parentheses or as a function.
    '+new Date;', 'new Date;', 'Date();', 'new Date(...args);', 'Date.call(null);', 'Reflect.construct(Date, []);',
    // Aliases, type assertions and optional chains.
    'const g = globalThis; g.setTimeout(f);', 'const D = Date; new D();', 'const M = Math; M.random();', '(Date as any).now();', 'Date!.now();',
    "(globalThis as any)['setTimeout'](f);", 'Date?.now();', 'Date.now.call(null);', 'export default globalThis;',
    // Node's modules.
    "import { setTimeout } from 'node:timers/promises';", "import { setInterval } from 'node:timers';", "import { scheduler } from 'timers/promises';",
    "import { randomUUID } from 'node:crypto';", "import { randomBytes } from 'node:crypto';", "import { randomInt as pick } from 'crypto';",
    "import * as c from 'node:crypto'; c.randomBytes(4);", "import c from 'node:crypto'; c.randomInt(3);", "import t from 'node:timers'; t.setTimeout(f);",
    "import { webcrypto } from 'node:crypto'; webcrypto.getRandomValues(b);", "import { performance as p } from 'node:perf_hooks'; p.now();",
    "const { randomBytes } = require('node:crypto');", "const c = require('node:crypto'); c.randomUUID();", "const { randomUUID } = await import('node:crypto');",
    "export { setTimeout } from 'node:timers';", "export * from 'node:crypto';", "export * as c from 'node:crypto';",
    // Leaks inside default values, conditions and awaited values.
    'const { at = Date.now() } = options;', 'function f(at = performance.now()) {}', 'const g = cond ? globalThis : other; g.setInterval(f);',
    'const later = options.later ?? setTimeout;', 'const c = await import("node:crypto"); c.randomBytes(1);',
  ])('catches %s outside an adapter', (source) => {
    expect(planted(source), source).toHaveLength(1);
  });

  it.each([
    'new Date(epochMs).toISOString();', 'Date.UTC(2026, 0, 1);', 'Date.parse(text);', 'value instanceof Date;', 'Math.floor(x);',
    'const { floor, max } = Math;', "import { createHash } from 'node:crypto';", "import { setImmediate } from 'node:timers';", 'setImmediate(f);',
    'queueMicrotask(f);', 'clock.setTimeout(f, 1);', 'const o = { setTimeout: 1, now: Date.UTC(2026, 0) };', 'class C { setTimeout() {} now() {} }',
    "const s = 'Date.now() and Math.random()';", '// setTimeout(f, 1)', 'let d: Date;', 'type T = typeof setTimeout;',
    'function f(x: ReturnType<typeof setInterval>): void {}', 'random.next();', "typeof window === 'undefined';",
    'function* window(events: number[]) { yield* events; } window([1]);', 'const self = { setTimeout: f }; self.setTimeout(g);',
    'function run(crypto: { randomUUID(): string }) { return crypto.randomUUID(); }', "import type { Hash } from 'node:crypto';",
    "const { createHash } = await import('node:crypto');", '(options.math ?? Math).floor(x);',
  ])('lets %s through', (source) => {
    expect(planted(source), source).toEqual([]);
  });

  it('reports each leak once, with its file and line', () => {
    expect(planted('const a = 1;\nconst b = Date.now();\n')).toEqual(['src/queue/planted.ts:2: Date.now (reads time, randomness or a timer)']);
  });

  it('lets production adapters, test files and lines that say why through, and nothing else', () => {
    expect(planted('return Date.now();', 'src/adapters/clock.ts')).toEqual([]);
    expect(planted('const x = Math.random();', 'src/queue/claim.test.ts')).toEqual([]);
    expect(planted('setTimeout(f); // allow-ambient: why', 'sim/event-loop.ts')).toEqual([]);
    // The event loop is exempt only where it says why; so is every other file.
    expect(planted('setTimeout(f);', 'sim/event-loop.ts')).toHaveLength(1);
    expect(planted('setTimeout(f); // allow-ambient', 'sim/event-loop.ts')).toHaveLength(1);
    expect(planted('// allow-ambient: the next line\nsetTimeout(f);', 'sim/event-loop.ts')).toHaveLength(1);
    expect(planted('setTimeout(f); /* allow-ambient: in a block comment */', 'sim/event-loop.ts')).toHaveLength(1);
    // Only src/adapters/ is the production adapters' folder.
    expect(planted('Date.now();', 'sim/adapters/clock.ts')).toHaveLength(1);
    expect(planted('Date.now();', 'src/queue/__test-helpers__/test-kit.ts')).toHaveLength(1);
    expect(planted('Date.now();', 'sim/check/tool.mjs')).toHaveLength(1);
    expect(planted('module.exports = Math.random();', 'sim/check/tool.cjs')).toHaveLength(1);
  });

  it('fails a file it cannot parse instead of skipping it', () => {
    expect(planted('const = ;')).toEqual([expect.stringMatching(/^src\/queue\/planted\.ts: cannot parse/)]);
  });
});
