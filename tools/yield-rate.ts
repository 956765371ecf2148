/**
 * Expected distinct features per second of thread time that `leasehold check`'s default budget buys,
 * read from a yield calibration (scenarios/calibration/yield.json, or an older one from git):
 *
 *   npx tsx tools/yield-rate.ts [FILE] [--base N] [--each]
 *   git show COMMIT:scenarios/calibration/yield.json > /tmp/old.json && npx tsx tools/yield-rate.ts /tmp/old.json
 *
 * It splits a budget of N seeds per scenario (default 100, the check's default) by yield exactly as
 * the check does (sim/check/budget.ts splitByYield) over every scenario the file lists, and sums each
 * scenario's expected features at its share (expectedFeatures). --each lists the scenarios from the
 * least features per second up. The milliseconds per seed are the calibration's, measured on the
 * machine that calibrated, so two files compare fairly only when both were calibrated alike.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { expectedFeatures, specHash, splitByYield, type YieldCalibration } from '../sim/check/budget.ts';
import type { ScenarioSpec } from '../sim/scenario.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { base: { type: 'string' }, each: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
if (values.help === true) {
  process.stdout.write('usage: npx tsx tools/yield-rate.ts [FILE] [--base N] [--each]\n');
  process.exit(0);
}
const file = positionals[0] ?? 'scenarios/calibration/yield.json';
const base = Number(values.base ?? 100);
if (!Number.isSafeInteger(base) || base < 1) {
  process.stderr.write(`yield-rate: --base must be a positive integer, got ${String(values.base)}\n`);
  process.exit(64);
}
const calibration = JSON.parse(readFileSync(file, 'utf8')) as YieldCalibration;
const names = Object.keys(calibration.scenarios).sort();
// The split takes an entry only for the version of the scenario it was measured on (its spec's hash):
// here every entry stands for itself, so each is matched with a stand-in spec of its name.
const specs: Record<string, ScenarioSpec> = {};
for (const name of names) {
  specs[name] = { name } as unknown as ScenarioSpec;
  calibration.scenarios[name]!.specHash = specHash(specs[name]!);
}
const split = splitByYield(names, specs, base, calibration);
const rows = names.map((name) => {
  const entry = calibration.scenarios[name]!;
  const seeds = split.seeds[name]!;
  return { name, seeds, features: expectedFeatures(entry, seeds), seconds: (seeds * entry.msPerSeed) / 1000 };
});
const features = rows.reduce((sum, row) => sum + row.features, 0);
process.stdout.write(`${file}: ${names.length} scenarios, base ${base}: ${(split.spentMs / 1000).toFixed(1)} s of thread time, ${features.toFixed(1)} expected features, ${(features / (split.spentMs / 1000)).toFixed(2)} per second\n`);
if (values.each === true) {
  for (const row of rows.sort((a, b) => a.features / a.seconds - b.features / b.seconds)) {
    process.stdout.write(`  ${row.name.padEnd(28)} ${String(row.seeds).padStart(4)} seeds  ${row.features.toFixed(1).padStart(8)} features  ${row.seconds.toFixed(1).padStart(7)} s  ${(row.features / row.seconds).toFixed(2)}/s\n`);
  }
}
