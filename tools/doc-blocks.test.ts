/**
 * The doc test: every code block of README.md and docs/*.md that claims to run is run, so an example
 * cannot drift from the code (tools/doc-blocks.ts states the convention). Programs run in a fresh
 * directory of their own with their `leasehold` imports pointed at the source entry files; scenario
 * files are validated and run for seed 1; `leasehold` commands run through tools/leasehold.js. A block
 * this test cannot run fails unless it is marked `no-run: REASON`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { validateScenario } from '../sim/check/scenario-file.ts';
import { PACKAGE_ROOT } from '../sim/package-root.ts';
import { runScenario } from '../sim/run-scenario.ts';
import { listScenarios } from '../sim/scenarios/registry.ts';
import { docPages, entryFiles, FRESH_CLONE, leaseholdCommands, parseBlocks, rewriteImports, type DocBlock } from './doc-blocks.ts';

/** Generous: the machine may be busy with other suites; nothing here asserts on speed. */
const BLOCK_TIMEOUT_MS = 240_000;
const README_MAX_BYTES = 10 * 1024;
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const CLI = join(PACKAGE_ROOT, 'tools', 'leasehold.js');
const ENTRIES = entryFiles(PACKAGE_ROOT);
const PAGES = docPages(PACKAGE_ROOT).map((doc) => ({ doc, text: readFileSync(join(PACKAGE_ROOT, doc), 'utf8') }));
const scratch: string[] = [];
const databases: string[] = [];

afterAll(async () => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  if (databases.length > 0) await onServer(databases.map((name) => `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
});

describe('the block convention', () => {
  const blocks = (text: string) => parseBlocks('docs/x.md', text);

  it('runs js, mjs and ts programs, json scenarios and sh commands, and shows text', () => {
    const text = ['```js', 'a', '```', '```ts file=agent.ts', 'b', '```', '```json', '{}', '```', '```sh', 'leasehold --help', '```', '```text', 'out', '```'].join('\n');
    expect(blocks(text).map(({ kind, file }) => [kind, file])).toEqual([['program', undefined], ['program', 'agent.ts'], ['scenario', undefined], ['commands', undefined], ['text', undefined]]);
  });

  it('refuses a language it cannot run, a bare fence, an indented fence and no-run without a reason', () => {
    const text = ['```yaml', 'a: 1', '```', '```', 'npm test', '```', '- item', '  ```js', '  x', '  ```', '```ts no-run', 'x', '```', '```yaml no-run: a workflow', 'a: 1', '```'].join('\n');
    expect(blocks(text).map(({ problem }) => problem)).toEqual([
      'the doc test cannot run a yaml block: mark it `yaml no-run: REASON`',
      'a fence with no language: name it (js, ts, json, sh, text, ...) or mark it no-run',
      'an indented fence: put code blocks at column 0, outside lists',
      'no-run needs a reason: `no-run: why this block cannot run`',
      undefined,
    ]);
  });

  it("allows the README's fresh-clone block, and only that, without a language", () => {
    const [block] = parseBlocks('README.md', `\`\`\`\n${FRESH_CLONE}\`\`\`\n`);
    expect([block?.kind, block?.problem]).toEqual(['text', undefined]);
    expect(parseBlocks('docs/x.md', `\`\`\`\n${FRESH_CLONE}\`\`\`\n`)[0]?.problem).toMatch(/no language/);
  });

  it("points 'leasehold' imports at the source entries and refuses an entry package.json does not export", () => {
    const root = pathToFileURL(join(PACKAGE_ROOT, 'src', 'index.ts')).href;
    expect(rewriteImports("import { Worker } from 'leasehold';\nconst m = await import(\"leasehold\");", ENTRIES)).toBe(`import { Worker } from '${root}';\nconst m = await import("${root}");`);
    expect(() => rewriteImports("import x from 'leasehold/nope';", ENTRIES)).toThrow(/leasehold\/nope/);
  });

  it('takes leasehold commands only', () => {
    expect(leaseholdCommands('# a comment\nnpx leasehold run --scenario mixed --seed 1   # one seed\nleasehold --help\n')).toEqual([
      { line: 'npx leasehold run --scenario mixed --seed 1', args: ['run', '--scenario', 'mixed', '--seed', '1'] },
      { line: 'leasehold --help', args: ['--help'] },
    ]);
    expect(() => leaseholdCommands('npm test')).toThrow(/not a leasehold command/);
    expect(() => leaseholdCommands('leasehold check > out.txt')).toThrow(/redirections/);
  });
});

describe('README.md', () => {
  const readme = PAGES.find(({ doc }) => doc === 'README.md')!.text;

  it(`fits in ${README_MAX_BYTES} bytes`, () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  it('shows the fresh-clone commands exactly', () => {
    expect(readme).toContain(`\`\`\`\n${FRESH_CLONE}\`\`\``);
  });
});

describe('docs/scenarios.md', () => {
  const text = PAGES.find(({ doc }) => doc === 'docs/scenarios.md')?.text ?? '';

  it('lists every catalogue scenario', () => {
    for (const { name } of listScenarios()) expect(text).toContain(`| \`${name}\` |`);
  });

  it('names every workload part, fault part and expectation kind of the file format', () => {
    const schema = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'scenarios', 'schema.json'), 'utf8')) as { properties: Record<string, { items: { oneOf: { properties: { kind: { const: string } } }[] } }> };
    const kinds = ['workload', 'faults', 'expect'].flatMap((section) => schema.properties[section]!.items.oneOf.map((part) => part.properties.kind.const));
    expect(kinds.length).toBeGreaterThan(50);
    expect(kinds.filter((kind) => !text.includes(`\`${kind}\``))).toEqual([]);
  });

  it('shows a scenario file, which the blocks below validate and run', () => {
    expect(parseBlocks('docs/scenarios.md', text).some((block) => block.kind === 'scenario' && block.noRunReason === undefined)).toBe(true);
  });
});

describe('TypeScript blocks', () => {
  // Running a block does not check its types (tsx strips them), so a misspelt option would pass unseen.
  it('type-check under strict settings', async () => {
    // Inside the package, so the blocks resolve its node_modules; the cache folder is not there on a fresh clone.
    const cache = join(PACKAGE_ROOT, 'node_modules', '.cache');
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'leasehold-doc-types-'));
    scratch.push(dir);
    const files = new Map<string, DocBlock>();
    for (const { doc, text } of PAGES) {
      for (const block of parseBlocks(doc, text)) {
        if (block.kind !== 'program' || block.lang !== 'ts' || block.noRunReason !== undefined || block.file !== undefined) continue;
        const name = `${doc.replace(/[^\w]/g, '_')}_${block.line}.mts`;
        writeFileSync(join(dir, name), rewriteImports(block.body, ENTRIES, 'path'));
        files.set(name, block);
      }
    }
    expect(files.size).toBeGreaterThan(5);
    const options = { target: 'ES2022', lib: ['ES2023'], module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], strict: true, noEmit: true, allowImportingTsExtensions: true, skipLibCheck: true };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: options, files: [...files.keys()] }));
    const result = await run(join(PACKAGE_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', join(dir, 'tsconfig.json')], PACKAGE_ROOT, {});
    // Only the blocks' own errors: the sources they import are the repository's typecheck's business.
    const errors = result.output.split('\n').flatMap((line) => {
      const match = /([\w]+_\d+\.mts)\((\d+),\d+\): (error .*)$/.exec(line);
      const block = match === null ? undefined : files.get(match[1]!);
      return block === undefined ? [] : [`${block.doc}:${block.line + Number(match![2])}: ${match![3]}`];
    });
    expect(errors).toEqual([]);
  }, BLOCK_TIMEOUT_MS);
});

describe('links', () => {
  it('every relative link of the README and docs/ names a file that exists, and a section of it that exists', () => {
    const broken: string[] = [];
    for (const { doc, text } of PAGES) {
      for (const [, target, fragment] of text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]*))?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const path = target === '' ? join(PACKAGE_ROOT, doc) : join(PACKAGE_ROOT, doc, '..', target!);
        let linked: string;
        try {
          linked = readFileSync(path, 'utf8');
        } catch {
          broken.push(`${doc}: ${target}`);
          continue;
        }
        if (fragment !== undefined && !anchorsOf(linked).has(fragment)) broken.push(`${doc}: ${target}#${fragment}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** The anchors a Markdown page offers: GitHub's slug of each heading, and each `<a id="...">`. */
function anchorsOf(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, '');
  const slugs = [...prose.matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) =>
    heading!.replace(/<[^>]*>/g, '').trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-'),
  );
  return new Set([...slugs, ...[...markdown.matchAll(/<a id="([^"]+)"><\/a>/g)].map(([, id]) => id!)]);
}

for (const { doc, text } of PAGES) {
  const blocks = parseBlocks(doc, text);
  // A no-run block (its reason is required: the parser reports one without), a text block and the
  // fresh-clone block are shown, not run: they get no test, rather than a skipped one.
  const tested = blocks.filter((block) => block.problem !== undefined || !(block.noRunReason !== undefined || block.kind === 'text' || block.kind === 'shown'));
  if (tested.length === 0) continue;
  describe(doc, () => {
    for (const block of tested) {
      const name = `line ${block.line}: ${block.info || '(no language)'}`;
      if (block.problem !== undefined) it(name, () => expect.fail(`${doc}:${block.line}: ${block.problem}`));
      else if (block.kind === 'scenario') it(name, () => runScenarioBlock(block), BLOCK_TIMEOUT_MS);
      else if (block.kind === 'program' && block.file !== undefined) it(name, () => expectUsed(block, blocks));
      else if (block.kind === 'program') it(name, () => runProgram(block, blocks), BLOCK_TIMEOUT_MS);
      else it(name, () => runCommands(block, blocks), BLOCK_TIMEOUT_MS);
    }
  });
}

async function runScenarioBlock(block: DocBlock): Promise<void> {
  const spec = validateScenario(JSON.parse(block.body), block.file);
  const report = await runScenario({ scenario: spec, seed: '1' });
  expect(report.violations, `${block.doc}:${block.line}: the scenario file passes seed 1`).toEqual([]);
}

/** A module block (file=NAME) does not run alone: a block of its page that runs must name it. */
function expectUsed(block: DocBlock, blocks: readonly DocBlock[]): void {
  const users = blocks.filter((other) => other !== block && (other.kind === 'program' || other.kind === 'commands') && other.noRunReason === undefined && other.body.includes(block.file!));
  expect(users.map(({ line }) => line), `${block.doc}:${block.line}: ${block.file} is named by a block that runs`).not.toEqual([]);
}

/** A fresh directory with the page's file= blocks in it, imports rewritten. */
function workspace(blocks: readonly DocBlock[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'leasehold-doc-'));
  scratch.push(dir);
  writeFileSync(join(dir, 'package.json'), '{ "private": true, "type": "module" }\n');
  for (const block of blocks) {
    if (block.file !== undefined && block.noRunReason === undefined) writeFileSync(join(dir, block.file), block.kind === 'program' ? rewriteImports(block.body, ENTRIES) : block.body);
  }
  return dir;
}

async function runProgram(block: DocBlock, blocks: readonly DocBlock[]): Promise<void> {
  const dir = workspace(blocks);
  const file = join(dir, block.lang === 'ts' ? 'example.ts' : 'example.mjs');
  writeFileSync(file, rewriteImports(block.body, ENTRIES));
  const env: Record<string, string> = block.body.includes('DATABASE_URL') ? { DATABASE_URL: await freshDatabase() } : {};
  const result = await run(process.execPath, ['--import', TSX, file], dir, env);
  expect(result.code, `${block.doc}:${block.line} exited ${result.code}\n${result.output}`).toBe(0);
}

async function runCommands(block: DocBlock, blocks: readonly DocBlock[]): Promise<void> {
  const dir = workspace(blocks);
  for (const { line, args } of leaseholdCommands(block.body)) {
    const result = await run(process.execPath, [CLI, ...args], dir, {});
    expect(result.code, `${block.doc}:${block.line}: \`${line}\` exited ${result.code}\n${result.output}`).toBe(0);
  }
}

function run(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Its own process group, so a timeout also ends what it started (a Supervisor's worker processes).
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n(killed after ${BLOCK_TIMEOUT_MS - 10_000} ms)`;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, BLOCK_TIMEOUT_MS - 10_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** A database of its own on the test run's PostgreSQL server (LEASEHOLD_PG_URL, set by vitest's global setup). */
async function freshDatabase(): Promise<string> {
  const server = process.env.LEASEHOLD_PG_URL;
  if (server === undefined || server === '') throw new Error('LEASEHOLD_PG_URL is not set: vitest.config.ts globalSetup should have set it');
  const name = `leasehold_doc_${process.pid}_${databases.length}_${Date.now()}`;
  databases.push(name);
  await onServer([`CREATE DATABASE ${name}`]);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.href;
}

async function onServer(statements: readonly string[]): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: process.env.LEASEHOLD_PG_URL });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}
