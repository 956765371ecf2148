import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mergeLines, mergeSummaries, mergedCatalogueMarkdown, mergedJunit, mergedSummaryJson, readSummaries } from '../../check/merge.ts';
import { htmlPage } from '../../report/render.ts';
import { esc } from '../../report/svg.ts';
import type { ParsedArgs } from '../args.ts';
import type { CommandContext } from '../command-context.ts';

/** Where the merged summary and index go without --out. */
export const DEFAULT_MERGE_DIR = join('reports', 'merged');

/**
 * `leasehold merge DIR... [--out DIR] [--junit FILE]`: the `--out` directories of the N shards of one
 * `leasehold check --shard K/N` (each on its own CI machine) folded into one verdict (the exit code the
 * unsharded check would give), one summary.json, one JUnit report and one catalogue index. Refuses
 * shards of different commits or root seeds, a shard given twice and a missing shard (exit 64).
 */
export async function execute(args: ParsedArgs, context: CommandContext): Promise<number> {
  const merged = mergeSummaries(readSummaries(args.positionals));
  for (const line of mergeLines(merged)) context.out(line);
  const outDir = args.string('out') ?? DEFAULT_MERGE_DIR;
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'summary.json'), `${JSON.stringify(mergedSummaryJson(merged), null, 2)}\n`);
  const markdown = mergedCatalogueMarkdown(merged);
  writeFileSync(join(outDir, 'index.md'), markdown);
  writeFileSync(join(outDir, 'index.html'), htmlPage('leasehold check, merged', markdownToHtml(markdown)));
  context.out(`summary: ${join(outDir, 'summary.json')}`);
  context.out(`catalogue: ${join(outDir, 'index.html')}`);
  const junit = args.string('junit');
  if (junit !== undefined) {
    mkdirSync(dirname(junit), { recursive: true });
    writeFileSync(junit, mergedJunit(merged));
    context.out(`junit: ${junit}`);
  }
  return merged.exitCode;
}

/** The index's few Markdown forms (a title, paragraphs, one table, a list, links, bold, code) as HTML. */
function markdownToHtml(markdown: string): string {
  const inline = (text: string) =>
    esc(text)
      .replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>')
      .replace(/`(.+?)`/g, '<code>$1</code>')
      .replace(/\[([^\]]+)\]\(([^)]+)\)/g, '<a href="$2">$1</a>');
  const out: string[] = [];
  let table: string[][] | undefined;
  let list = false;
  const flush = () => {
    if (table !== undefined) {
      const [head, , ...body] = table;
      out.push(`<table><thead><tr>${head!.map((cell) => `<th>${inline(cell)}</th>`).join('')}</tr></thead><tbody>${body.map((row) => `<tr>${row.map((cell) => `<td>${inline(cell)}</td>`).join('')}</tr>`).join('')}</tbody></table>`);
      table = undefined;
    }
    if (list) out.push('</ul>');
    list = false;
  };
  for (const line of markdown.split('\n')) {
    if (line.startsWith('|')) {
      (table ??= []).push(line.slice(1, -1).split('|').map((cell) => cell.trim()));
      continue;
    }
    if (line.startsWith('- ')) {
      if (!list) out.push('<ul>');
      list = true;
      out.push(`<li>${inline(line.slice(2))}</li>`);
      continue;
    }
    flush();
    if (line.startsWith('## ')) out.push(`<h2>${inline(line.slice(3))}</h2>`);
    else if (line.startsWith('# ')) out.push(`<h1>${inline(line.slice(2))}</h1>`);
    else if (line.trim() !== '') out.push(`<p>${inline(line)}</p>`);
  }
  flush();
  return out.join('\n');
}
