import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applySabotage, BLIND_SPOTS, INVARIANTS, occurrences, plantedTexts, SABOTAGES, StaleSabotageError } from './catalogue.ts';
import { FLEET_FILE, FLEET_OFF, FLEET_ON, parseArguments, table, type MutantOutcome } from './run.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the sabotage catalogue (issue 7)', () => {
  it('has at least 15 well-formed sabotages with unique ids', () => {
    expect(SABOTAGES.length).toBeGreaterThanOrEqual(15);
    const ids = SABOTAGES.map((sabotage) => sabotage.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const sabotage of SABOTAGES) {
      expect(sabotage.id, sabotage.id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
      expect(sabotage.description.length, sabotage.id).toBeGreaterThan(30);
      expect(sabotage.file, sabotage.id).toMatch(/^src\/.+\.ts$/);
      expect(sabotage.file, sabotage.id).not.toMatch(/\.test\.ts$/);
      expect(sabotage.find, sabotage.id).not.toBe('');
      expect(sabotage.replace, sabotage.id).not.toBe(sabotage.find);
      expect(INVARIANTS, sabotage.id).toContain(sabotage.expectedInvariant);
      for (const edit of sabotage.also ?? []) {
        expect(edit.file, sabotage.id).toMatch(/^src\/.+\.ts$/);
        expect(edit.file, sabotage.id).not.toMatch(/\.test\.ts$/);
        expect(edit.replace, sabotage.id).not.toBe(edit.find);
      }
    }
  });

  it('plants at least three bugs against each blind spot of the simulation (issue 15)', () => {
    for (const spot of BLIND_SPOTS) {
      expect(SABOTAGES.filter((sabotage) => sabotage.blindSpot === spot).map((sabotage) => sabotage.id).length, spot).toBeGreaterThanOrEqual(3);
    }
  });

  it('applies every edit of a sabotage that spans two places, each exactly once, in order', () => {
    for (const sabotage of SABOTAGES.filter((entry) => (entry.also ?? []).length > 0)) {
      const texts = plantedTexts(sabotage, (file) => readFileSync(join(ROOT, file), 'utf8'));
      for (const [file, text] of texts) expect(text, `${sabotage.id} ${file}`).not.toBe(readFileSync(join(ROOT, file), 'utf8'));
    }
    const base = { id: 'two-places', file: 'a.ts', find: 'A', replace: 'B' };
    const files: Record<string, string> = { 'a.ts': 'xAy', 'b.ts': 'C' };
    expect(plantedTexts({ ...base, also: [{ file: 'a.ts', find: 'By', replace: 'Bz' }, { file: 'b.ts', find: 'C', replace: 'D' }] }, (file) => files[file]!)).toEqual(
      new Map([['a.ts', 'xBz'], ['b.ts', 'D']]),
    );
    expect(() => plantedTexts({ ...base, also: [{ file: 'a.ts', find: 'A', replace: 'Q' }] }, (file) => files[file]!)).toThrow(StaleSabotageError);
  });

  it("matches every find text exactly once in the current src/, so a refactor that breaks one fails here", () => {
    const stale: string[] = [];
    for (const sabotage of SABOTAGES) {
      const text = readFileSync(join(ROOT, sabotage.file), 'utf8');
      const found = occurrences(text, sabotage.find).length;
      if (found !== 1) stale.push(`${sabotage.id}: ${found} matches in ${sabotage.file}`);
    }
    expect(stale).toEqual([]);
  });

  it('changes the file when applied, and only at the find text', () => {
    for (const sabotage of SABOTAGES) {
      const text = readFileSync(join(ROOT, sabotage.file), 'utf8');
      const changed = applySabotage(text, sabotage);
      expect(changed, sabotage.id).not.toBe(text);
      expect(changed.length - text.length, sabotage.id).toBe(sabotage.replace.length - sabotage.find.length);
    }
  });

  it('names each of I1..I13 as the expected catcher of at least one sabotage', () => {
    const covered = new Set(SABOTAGES.map((sabotage) => sabotage.expectedInvariant));
    const missing = INVARIANTS.filter((invariant) => invariant !== 'I14' && !covered.has(invariant));
    expect(missing).toEqual([]);
  });

  it('refuses a find text that matches twice or not at all, instead of counting it as caught', () => {
    const base = { id: 'planted', file: 'src/x.ts', replace: 'B' };
    expect(() => applySabotage('A A', { ...base, find: 'A' })).toThrow(StaleSabotageError);
    expect(() => applySabotage('C', { ...base, find: 'A' })).toThrow(/occurs 0 times/);
    expect(applySabotage('xAy', { ...base, find: 'A' })).toBe('xBy');
  });
});

describe('--without-fleet', () => {
  it('finds the fleet default it turns off exactly once, so the experiment cannot silently run with the fleet on', () => {
    const text = readFileSync(join(ROOT, FLEET_FILE), 'utf8');
    expect(occurrences(text, FLEET_ON)).toHaveLength(1);
    expect(applySabotage(text, { id: 'without-fleet', file: FLEET_FILE, find: FLEET_ON, replace: FLEET_OFF })).toContain('interleave: 0,');
    expect(parseArguments(['--without-fleet'])).toMatchObject({ withoutFleet: true });
    expect(parseArguments([])).toMatchObject({ withoutFleet: false });
  });
});

describe('the mutants table', () => {
  it('marks missed and stale sabotages loudly and shows the catcher, the seeds and the sizes', () => {
    const outcome = (fields: Partial<MutantOutcome>): MutantOutcome => ({
      id: 'x',
      expected: 'I2',
      status: 'caught',
      caughtBy: ['I2'],
      expectedSeen: true,
      exitCode: 1,
      seedsRun: 10,
      wallMs: 1,
      ...fields,
    });
    const lines = table([
      outcome({ id: 'caught-one', firstFailure: { scenario: 'mixed', seed: '1', index: 2, message: 'm', file: 'f' }, size: { faults: 4, tasks: 20 }, shrunk: { faults: 1, tasks: 2, runs: 9, complete: true } }),
      outcome({ id: 'missed-one', status: 'missed', caughtBy: [], expectedSeen: false, exitCode: 0, seedsRun: 100 }),
      outcome({ id: 'stale-one', status: 'stale', caughtBy: [], expectedSeen: false, exitCode: null }),
    ]);
    expect(lines[2]).toMatch(/caught-one\s+I2\s+yes\s+I2\s+mixed #2\s+3\s+4f\/20t\s+1f\/2t$/);
    expect(lines[3]).toMatch(/missed-one\s+I2\s+MISSED\s+-\s+-\s+>100/);
    expect(lines[4]).toMatch(/stale-one\s+I2\s+STALE/);
  });
});

describe('npm run mutants usage', () => {
  it('answers --help and -h, and names a bad flag or sabotage', () => {
    expect(parseArguments(['--help'])).toBe('help');
    expect(parseArguments(['-h'])).toBe('help');
    expect(parseArguments(['--list'])).toBe('list');
    expect(() => parseArguments(['--bogus'])).toThrow('unknown argument --bogus');
    expect(() => parseArguments(['--only', 'no-such-bug'])).toThrow('unknown sabotage(s): no-such-bug (see --list)');
    expect(() => parseArguments(['--seeds', '0'])).toThrow('--seeds expects an integer >= 1, got 0');
  });
});
