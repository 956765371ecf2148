/**
 * docs/contract.md is the behaviour contract the package ships, and code comments cite its requirement
 * ids (`// Q8: ...`). This keeps the two in step: every id a comment of src/ or sim/ cites has its anchor
 * in docs/contract.md, and, where the project's SPEC sits beside the repository (../shared/SPEC.md, not
 * shipped), the contract has exactly the SPEC's ids.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../sim/package-root.ts';

const CONTRACT = readFileSync(join(PACKAGE_ROOT, 'docs', 'contract.md'), 'utf8');
const SPEC_PATH = join(PACKAGE_ROOT, '..', 'shared', 'SPEC.md');
const ID = /\b([QRAPWTOSI])(\d{1,2})\b/g;

/** Tokens of comments that look like an id and are not one, each with its reason. */
const NOT_IDS: ReadonlyMap<string, string> = new Map([
  ['Q0', "sim/check/budget.ts: Chao's estimate of the features no seed reached yet (with Q1 and Q2, its counts)"],
]);

/** The ids the contract gives an anchor: `<a id="Q8"></a>`. */
export function contractIds(text: string): string[] {
  return [...text.matchAll(/<a id="([QRAPWTOSI]\d{1,2})"><\/a>/g)].map((match) => match[1]!);
}

/** The requirement ids of the SPEC: its bold list items (`**Q1 Idempotent enqueue.**`) and its invariant rows (`| I1 |`). */
export function specIds(text: string): string[] {
  return [...text.matchAll(/^- \*\*([QRAPWTOS]\d{1,2})\b|^\| (I\d{1,2}) \|/gm)].map((match) => (match[1] ?? match[2])!);
}

/** The comment text of a TypeScript source: line comments and block comments. */
export function commentsOf(source: string): string[] {
  return [...source.matchAll(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g)].map((match) => match[0]);
}

/** Each id the comments of src/ and sim/ cite, with the first file that cites it. */
function citedIds(): Map<string, string> {
  const files = execFileSync('git', ['ls-files', '--', 'src', 'sim'], { cwd: PACKAGE_ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file.endsWith('.ts') && existsSync(join(PACKAGE_ROOT, file)));
  const cited = new Map<string, string>();
  for (const file of files) {
    for (const comment of commentsOf(readFileSync(join(PACKAGE_ROOT, file), 'utf8'))) {
      for (const [id] of comment.matchAll(ID)) if (!cited.has(id) && !NOT_IDS.has(id)) cited.set(id, file);
    }
  }
  return cited;
}

describe('docs/contract.md', () => {
  it('reads anchors, SPEC ids and comments as meant', () => {
    expect(contractIds('- <a id="Q1"></a>**Q1 Idempotent enqueue.** ... | <a id="I22"></a>I22 |')).toEqual(['Q1', 'I22']);
    expect(specIds('- **Q1 Idempotent enqueue.** Key\n  - **not an id**\n| I1 | no double claim |\n| id | invariant |')).toEqual(['Q1', 'I1']);
    expect(commentsOf("const a = 1; // Q8: fenced\n/** R3: once */ const b = 'Q9';")).toEqual(['// Q8: fenced', '/** R3: once */']);
  });

  it('anchors every requirement id that a comment of src/ or sim/ cites', () => {
    const anchors = new Set(contractIds(CONTRACT));
    const missing = [...citedIds()].filter(([id]) => !anchors.has(id)).map(([id, file]) => `${id} (cited in ${file})`);
    expect(missing).toEqual([]);
  });

  it('gives each id one anchor', () => {
    const ids = contractIds(CONTRACT);
    expect(ids.filter((id, index) => ids.indexOf(id) !== index)).toEqual([]);
    expect(ids.length).toBeGreaterThan(80);
  });

  it('is the only page that cites requirement ids: the README and the guides say the behaviour', () => {
    const pages = ['README.md', ...readdirSync(join(PACKAGE_ROOT, 'docs')).filter((name) => name.endsWith('.md') && name !== 'contract.md').map((name) => `docs/${name}`)];
    const cited = pages.flatMap((page) => {
      // Prose only: code blocks and inline code hold names (a tool call T1, a label) that merely look like ids.
      const prose = readFileSync(join(PACKAGE_ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`]*`/g, '');
      return [...prose.matchAll(/\b[QRAPWTOS]\d{1,2}\b/g)].map(([id]) => `${page}: ${id}`);
    });
    expect(cited).toEqual([]);
  });

  it.runIf(existsSync(SPEC_PATH))('has exactly the ids of the SPEC beside the repository', () => {
    const spec = specIds(readFileSync(SPEC_PATH, 'utf8'));
    expect(spec.length).toBeGreaterThan(80);
    expect([...contractIds(CONTRACT)].sort()).toEqual([...new Set(spec)].sort());
  });
});
