/**
 * `npm run footprint`: what installing leasehold costs a user, measured on the packed tarball installed
 * into empty projects (issue 32 item 1). For each kind of user:
 *
 *   sqlite     the tarball alone (the queue on SQLite)
 *   postgres   + pg (the queue on PostgreSQL)
 *   harness    + zod seedrandom (what `leasehold check` needs)
 *   pglite     + zod seedrandom @electric-sql/pglite (`leasehold check --store pglite`)
 *
 * it prints node_modules' size (apparent bytes, as `du -s --apparent-size`, and disk usage, as `du -s`),
 * the part of it beyond better-sqlite3 and its own dependency tree (the SQLite-only target: under 5 MB),
 * and the runtime package count (`npm ls --omit=dev --all --parseable`, the project itself left out).
 * Then, in the SQLite-only project, the cost of `import { openWorkQueue } from 'leasehold'` beside
 * `import Database from 'better-sqlite3'` alone and an empty script: wall time of a node process that
 * imports it, the import's own time measured inside the process, and the process's peak RSS; runs
 * interleaved, medians, and the ratios to better-sqlite3 alone.
 *
 *   npm run footprint -- [--tarball FILE] [--runs N] [--json FILE] [--max-beyond-sqlite-mb M]
 *
 * Without --tarball it packs the repository (npm pack, which builds dist/ first). The optional peers are
 * installed at the versions package-lock.json pins for the repository's own tests. With
 * --max-beyond-sqlite-mb it exits 1 when the SQLite-only install's part beyond better-sqlite3 is larger
 * (apparent or on disk). Dependencies come from the npm cache when they are there.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const USAGE = 'Usage: npm run footprint -- [--tarball FILE] [--runs N] [--json FILE] [--max-beyond-sqlite-mb M]';

interface Options {
  tarball: string | undefined;
  runs: number;
  json: string | undefined;
  maxBeyondSqliteMb: number | undefined;
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = { tarball: undefined, runs: 15, json: undefined, maxBeyondSqliteMb: undefined };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--help' || flag === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
    i++;
    if (flag === '--tarball') options.tarball = resolve(value);
    else if (flag === '--json') options.json = resolve(value);
    else if (flag === '--runs') options.runs = positive(flag, value);
    else if (flag === '--max-beyond-sqlite-mb') options.maxBeyondSqliteMb = positive(flag, value);
    else throw new Error(`unknown flag ${flag}\n${USAGE}`);
  }
  return options;
}

function positive(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} expects a positive number, got '${value}'`);
  return n;
}

/** The peers each kind of user adds to the tarball. */
const PROFILES: readonly { name: string; adds: readonly string[]; what: string }[] = [
  { name: 'sqlite', adds: [], what: 'the queue on SQLite: the tarball alone' },
  { name: 'postgres', adds: ['pg'], what: 'the queue on PostgreSQL: + pg' },
  { name: 'harness', adds: ['zod', 'seedrandom'], what: 'leasehold check: + zod seedrandom' },
  { name: 'pglite', adds: ['zod', 'seedrandom', '@electric-sql/pglite'], what: 'leasehold check --store pglite: + @electric-sql/pglite' },
];

/** `name@version` as the repository's package-lock.json pins it (what the repository's tests run with). */
function pinned(name: string): string {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (version === undefined) throw new Error(`package-lock.json pins no ${name}`);
  return `${name}@${version}`;
}

function npm(args: readonly string[], cwd: string): string {
  return execFileSync('npm', [...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 });
}

const INSTALL = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--silent'];

/** Apparent bytes (file sizes) and disk bytes (allocated blocks) of a tree, each inode once, as du counts. */
interface Size {
  apparent: number;
  disk: number;
}

function treeSize(dir: string, skip: (path: string) => boolean = () => false, seen = new Set<string>()): Size {
  const total: Size = { apparent: 0, disk: 0 };
  const stat = lstatSync(dir);
  total.apparent += stat.size;
  total.disk += stat.blocks * 512;
  if (!stat.isDirectory()) return total;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (skip(path)) continue;
    const inner = lstatSync(path);
    const key = `${inner.dev}:${inner.ino}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const size = inner.isDirectory() ? treeSize(path, skip, seen) : { apparent: inner.size, disk: inner.blocks * 512 };
    total.apparent += size.apparent;
    total.disk += size.disk;
  }
  return total;
}

/** The directory a package's dependency `name` resolves to from `from` (Node's lookup: nested node_modules first, then up). */
function resolvePackageDir(from: string, name: string, top: string): string | undefined {
  for (let dir = from; dir.startsWith(top); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === top) break;
  }
  return undefined;
}

/** The package directories of `name` and everything it depends on at run time (dependencies and installed optionalDependencies). */
function dependencyTree(project: string, name: string): Set<string> {
  const found = new Set<string>();
  const visit = (dir: string | undefined) => {
    if (dir === undefined || found.has(dir)) return;
    found.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> };
    for (const dependency of Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies })) visit(resolvePackageDir(dir, dependency, project));
  };
  visit(resolvePackageDir(project, name, project));
  return found;
}

interface Footprint {
  profile: string;
  what: string;
  installs: string[];
  nodeModules: Size;
  betterSqlite3Tree: Size & { packages: number };
  beyondBetterSqlite3: Size;
  runtimePackages: number;
  largest: { name: string; apparent: number }[];
}

function footprint(project: string, profile: (typeof PROFILES)[number], installs: string[]): Footprint {
  const modules = join(project, 'node_modules');
  const nodeModules = treeSize(modules);
  // Each package of better-sqlite3's tree without its own nested node_modules (those are packages of the tree too, counted once each).
  const tree = dependencyTree(project, 'better-sqlite3');
  const seen = new Set<string>();
  const treeTotal: Size = { apparent: 0, disk: 0 };
  for (const dir of tree) {
    const size = treeSize(dir, (path) => path === join(dir, 'node_modules'), seen);
    treeTotal.apparent += size.apparent;
    treeTotal.disk += size.disk;
  }
  const parseable = npm(['ls', '--omit=dev', '--all', '--parseable'], project).trim().split('\n').filter((line) => line !== '' && resolve(line) !== resolve(project));
  const runtimePackages = new Set(parseable).size;
  const largest = topLevelPackages(modules)
    .map((dir) => ({ name: dir.slice(modules.length + 1), apparent: treeSize(dir).apparent }))
    .sort((a, b) => b.apparent - a.apparent)
    .slice(0, 8);
  return {
    profile: profile.name,
    what: profile.what,
    installs,
    nodeModules,
    betterSqlite3Tree: { ...treeTotal, packages: tree.size },
    beyondBetterSqlite3: { apparent: nodeModules.apparent - treeTotal.apparent, disk: nodeModules.disk - treeTotal.disk },
    runtimePackages,
    largest,
  };
}

function topLevelPackages(modules: string): string[] {
  const dirs: string[] = [];
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue;
    const path = join(modules, entry);
    if (entry.startsWith('@')) for (const inner of readdirSync(path)) dirs.push(join(path, inner));
    else dirs.push(path);
  }
  return dirs;
}

/** One measured node process: wall time, the import's own time inside it, its peak RSS. */
interface Sample {
  wallMs: number;
  importMs: number;
  maxRssMb: number;
}

const IMPORTS: readonly { name: string; source: string }[] = [
  { name: "import { openWorkQueue } from 'leasehold'", source: "const { openWorkQueue } = await import('leasehold'); if (typeof openWorkQueue !== 'function') throw new Error('no openWorkQueue');" },
  { name: "import Database from 'better-sqlite3'", source: "const { default: Database } = await import('better-sqlite3'); if (typeof Database !== 'function') throw new Error('no Database');" },
  { name: 'node with an empty script', source: '' },
];

function measureImports(project: string, runs: number): { name: string; median: Sample; samples: Sample[] }[] {
  const scripts = IMPORTS.map((entry, i) => {
    const file = join(project, `import-${i}.mjs`);
    writeFileSync(
      file,
      `const start = performance.now();\n${entry.source}\nconst importMs = performance.now() - start;\nprocess.stdout.write(JSON.stringify({ importMs, maxRssKb: process.resourceUsage().maxRSS }));\n`,
    );
    return file;
  });
  const samples: Sample[][] = IMPORTS.map(() => []);
  // One warm-up round (file cache), then the runs, each round in turn so drift hits all alike.
  for (let round = -1; round < runs; round++) {
    scripts.forEach((file, i) => {
      const start = process.hrtime.bigint();
      const result = spawnSync(process.execPath, [file], { cwd: project, encoding: 'utf8' });
      const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
      if (result.status !== 0) throw new Error(`${IMPORTS[i]?.name} failed: ${result.stderr}`);
      const { importMs, maxRssKb } = JSON.parse(result.stdout) as { importMs: number; maxRssKb: number };
      if (round >= 0) samples[i]?.push({ wallMs, importMs, maxRssMb: maxRssKb / 1024 });
    });
  }
  return IMPORTS.map((entry, i) => {
    const mine = samples[i] as Sample[];
    return { name: entry.name, samples: mine, median: { wallMs: median(mine.map((s) => s.wallMs)), importMs: median(mine.map((s) => s.importMs)), maxRssMb: median(mine.map((s) => s.maxRssMb)) } };
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

function main(): void {
  const options = parseOptions(process.argv.slice(2));
  const work = mkdtempSync(join(tmpdir(), 'leasehold-footprint-'));
  try {
    let tarball = options.tarball;
    if (tarball === undefined) {
      mkdirSync(join(work, 'pack'));
      const [info] = JSON.parse(npm(['pack', '--silent', '--json', '--pack-destination', join(work, 'pack')], ROOT)) as { filename: string }[];
      tarball = join(work, 'pack', (info as { filename: string }).filename);
    }
    const results: Footprint[] = [];
    const base = join(work, 'sqlite');
    for (const profile of PROFILES) {
      const project = join(work, profile.name);
      const installs = profile.adds.map(pinned);
      if (profile.name === 'sqlite') {
        mkdirSync(project);
        writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'footprint-sqlite', private: true, type: 'module' }, null, 2));
        npm([...INSTALL, tarball], project);
      } else {
        // The SQLite project copied (better-sqlite3 is built once), then the profile's peers added. None of
        // them has an install script; without --ignore-scripts npm would build better-sqlite3 again in the
        // copy, leaving a second build's files in it that a single install does not have.
        // cp -a keeps hard links (node-gyp links the built addon twice), as one install has them.
        execFileSync('cp', ['-a', base, project]);
        npm([...INSTALL, '--ignore-scripts', ...installs], project);
      }
      results.push(footprint(project, profile, [tarball.split('/').at(-1) as string, ...installs]));
    }
    const imports = measureImports(base, options.runs);

    console.log(`footprint of ${tarball.split('/').at(-1)} (node ${process.version}, ${process.platform}-${process.arch})`);
    console.log('');
    console.log('user       node_modules (apparent / disk)   beyond better-sqlite3 (apparent / disk)   runtime packages   installs');
    for (const r of results) {
      console.log(
        `${r.profile.padEnd(10)} ${`${mb(r.nodeModules.apparent)} / ${mb(r.nodeModules.disk)}`.padEnd(32)} ${`${mb(r.beyondBetterSqlite3.apparent)} / ${mb(r.beyondBetterSqlite3.disk)}`.padEnd(41)} ${String(r.runtimePackages).padEnd(18)} ${r.installs.join(' ')}`,
      );
    }
    const sqlite = results[0] as Footprint;
    console.log('');
    console.log(`better-sqlite3 and its own dependency tree (${sqlite.betterSqlite3Tree.packages} packages): ${mb(sqlite.betterSqlite3Tree.apparent)} apparent / ${mb(sqlite.betterSqlite3Tree.disk)} disk`);
    for (const r of results) console.log(`largest in ${r.profile}: ${r.largest.map((p) => `${p.name} ${mb(p.apparent)}`).join(', ')}`);
    console.log('');
    const [leasehold, betterSqlite3, empty] = imports as [(typeof imports)[number], (typeof imports)[number], (typeof imports)[number]];
    console.log(`import cost in the SQLite-only project (medians of ${options.runs} interleaved runs, after one warm-up round):`);
    for (const entry of imports) {
      console.log(`  ${entry.name.padEnd(44)} process ${entry.median.wallMs.toFixed(0).padStart(4)} ms   import ${entry.median.importMs.toFixed(1).padStart(6)} ms   peak RSS ${entry.median.maxRssMb.toFixed(1)} MB`);
    }
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    console.log(
      `  leasehold / better-sqlite3 alone: process ${ratio(leasehold.median.wallMs, betterSqlite3.median.wallMs)}x, import ${ratio(leasehold.median.importMs, betterSqlite3.median.importMs)}x, peak RSS ${ratio(leasehold.median.maxRssMb, betterSqlite3.median.maxRssMb)}x` +
        ` (beyond an empty node: +${(leasehold.median.wallMs - empty.median.wallMs).toFixed(0)} ms and +${(leasehold.median.maxRssMb - empty.median.maxRssMb).toFixed(1)} MB, against +${(betterSqlite3.median.wallMs - empty.median.wallMs).toFixed(0)} ms and +${(betterSqlite3.median.maxRssMb - empty.median.maxRssMb).toFixed(1)} MB)`,
    );
    if (options.json !== undefined) writeFileSync(options.json, `${JSON.stringify({ tarball: tarball.split('/').at(-1), node: process.version, footprints: results, imports }, null, 2)}\n`);
    if (options.maxBeyondSqliteMb !== undefined) {
      const limit = options.maxBeyondSqliteMb * 1e6;
      const over = Math.max(sqlite.beyondBetterSqlite3.apparent, sqlite.beyondBetterSqlite3.disk);
      if (over >= limit) {
        console.error(`footprint: FAIL: the SQLite-only install has ${mb(over)} beyond better-sqlite3's tree, over the ${options.maxBeyondSqliteMb} MB target`);
        process.exitCode = 1;
      } else {
        console.log(`footprint: the SQLite-only install is ${mb(over)} beyond better-sqlite3's tree, under the ${options.maxBeyondSqliteMb} MB target`);
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main();
