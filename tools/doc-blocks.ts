import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The code blocks of README.md and docs/*.md, read so that tools/doc-blocks.test.ts can run them: an
 * example in the docs is a program that runs, so it cannot drift from the code.
 *
 * The convention, stated once (docs/README.md repeats it for writers):
 *
 * - Every fence names a language. `js`, `mjs` and `ts` blocks are programs: each is written to a fresh
 *   directory and run with node (tsx loads TypeScript), and must exit 0. A `json` block is a scenario
 *   file: it must validate and pass seed 1. A `sh` block holds `leasehold` commands, one a line, each
 *   run through tools/leasehold.js and expected to exit 0. A `text` block is output, a tree or a
 *   diagram, and never runs. A `ts` block is also type-checked under strict settings.
 * - `no-run: REASON` after the language shows a block without running it; the reason is required. Any
 *   other language (yaml, sql, ...) must carry it.
 * - `file=NAME` writes the block as NAME beside every block of the same page that runs (an agent
 *   module the Supervisor loads, a scenario file a command names). Such a JavaScript or TypeScript
 *   block does not run on its own, so another block of its page must name it.
 * - The one fence without a language is the README's fresh-clone block, allowed by its exact content.
 */

export type BlockKind = 'program' | 'scenario' | 'commands' | 'text' | 'shown';

export interface DocBlock {
  /** The page, relative to the repository root. */
  doc: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  info: string;
  body: string;
  kind: BlockKind;
  /** Set by `file=NAME`. */
  file?: string;
  /** Set by `no-run: REASON`. */
  noRunReason?: string;
  /** What is wrong with the block's fence or marking; a block with a problem fails the doc test. */
  problem?: string;
}

export const PROGRAM_LANGS = new Set(['js', 'mjs', 'ts']);

/** The README's fresh-clone commands, exactly as the README must show them (a fence with no language). */
export const FRESH_CLONE = 'npm ci && npm start      # main job: check the scenario catalogue, write reports/\nnpm test                 # the whole test suite\n';

/** The pages whose blocks run: the README and every Markdown page of docs/. */
export function docPages(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

/** Splits a page into its fenced blocks; a fence that is indented or never closed is a problem too. */
export function parseBlocks(doc: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    const opening = /^(\s*)(`{3,}|~{3,})(.*)$/.exec(lines[index]!);
    if (opening === null) continue;
    const [, indent, fence, rest] = opening as unknown as [string, string, string, string];
    const start = index;
    const body: string[] = [];
    for (index += 1; index < lines.length && !lines[index]!.startsWith(`${indent}${fence}`); index += 1) body.push(lines[index]!.slice(indent.length));
    const block = classify(doc, start + 1, rest.trim(), body.length === 0 ? '' : `${body.join('\n')}\n`);
    if (indent !== '') block.problem = 'an indented fence: put code blocks at column 0, outside lists';
    if (index >= lines.length) block.problem = 'a fence that is never closed';
    blocks.push(block);
  }
  return blocks;
}

function classify(doc: string, line: number, info: string, body: string): DocBlock {
  const [lang = '', ...words] = info.split(/\s+/).filter((word) => word !== '');
  const block: DocBlock = { doc, line, lang, info, body, kind: 'shown' };
  const rest = words.join(' ');
  const noRun = /(?:^|\s)no-run(?::\s*(.*))?$/.exec(rest);
  const file = /(?:^|\s)file=(\S+)/.exec(rest)?.[1];
  if (file !== undefined) block.file = file;
  if (noRun !== null) {
    block.noRunReason = (noRun[1] ?? '').trim();
    if (block.noRunReason === '') block.problem = 'no-run needs a reason: `no-run: why this block cannot run`';
    else if (file !== undefined) block.problem = 'a file= block is used by others, so it cannot be no-run';
    return block;
  }
  const unknownWords = rest.replace(/(?:^|\s)file=\S+/, '').trim();
  if (unknownWords !== '') block.problem = `unknown marks "${unknownWords}": the info string is LANG [file=NAME] or LANG no-run: REASON`;
  if (lang === '') {
    if (doc === 'README.md' && body === FRESH_CLONE) block.kind = 'text';
    else block.problem = 'a fence with no language: name it (js, ts, json, sh, text, ...) or mark it no-run';
  } else if (PROGRAM_LANGS.has(lang)) block.kind = 'program';
  else if (lang === 'json') block.kind = 'scenario';
  else if (lang === 'sh') block.kind = 'commands';
  else if (lang === 'text') block.kind = 'text';
  else block.problem = `the doc test cannot run a ${lang} block: mark it \`${lang} no-run: REASON\``;
  if (file !== undefined && block.kind !== 'program' && block.kind !== 'scenario') block.problem = 'file= is for js, mjs, ts and json blocks';
  return block;
}

/**
 * The package's import paths and the source files they are built from, read from package.json's
 * `exports` (`./dist/X.js` is compiled from `X.ts`): `leasehold` is src/index.ts, and each subpath
 * export maps the same way, so a new entry needs no change here.
 */
export function entryFiles(root: string): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
  const entries = new Map<string, string>();
  for (const [key, target] of Object.entries(manifest.exports)) {
    const built = typeof target === 'string' ? target : (target as { import?: string; default?: string }).import ?? (target as { default?: string }).default;
    const source = /^\.\/dist\/(.+)\.js$/.exec(built ?? '')?.[1];
    if (source === undefined) continue;
    entries.set(key === '.' ? manifest.name : `${manifest.name}${key.slice(1)}`, join(root, `${source}.ts`));
  }
  return entries;
}

/**
 * Rewrites `from 'leasehold'` and `'leasehold/sub'` (static, side-effect and dynamic imports) to the source
 * files: as file URLs for node, or as plain paths for the type checker, which does not resolve URLs.
 */
export function rewriteImports(code: string, entries: ReadonlyMap<string, string>, as: 'url' | 'path' = 'url'): string {
  return code.replace(/(\bfrom\s*|\bimport\s*\(?\s*)(['"])(leasehold(?:\/[\w./-]+)?)\2/g, (_whole, lead: string, quote: string, specifier: string) => {
    const file = entries.get(specifier);
    if (file === undefined) throw new Error(`imports '${specifier}', which package.json's exports do not name`);
    return `${lead}${quote}${as === 'url' ? pathToFileURL(file).href : file}${quote}`;
  });
}

/** The commands of a `sh` block: each non-empty, non-comment line as its arguments after `leasehold`. */
export function leaseholdCommands(body: string): { line: string; args: string[] }[] {
  const commands: { line: string; args: string[] }[] = [];
  for (const raw of body.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    if (/[|&;<>`$]/.test(line)) throw new Error(`"${raw.trim()}": pipes, redirections and variables do not run here; mark the block no-run`);
    const words = splitWords(line);
    const start = words[0] === 'npx' ? 1 : 0;
    if (words[start] !== 'leasehold') throw new Error(`"${raw.trim()}" is not a leasehold command; mark the block no-run`);
    commands.push({ line, args: words.slice(start + 1) });
  }
  return commands;
}

function splitWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}
