import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { YIELD_FILE } from '../sim/check/budget.ts';
import { PACKAGE_ROOT } from '../sim/package-root.ts';
import { parseCalibrateArguments } from './calibrate.ts';

describe('npm run calibrate arguments', () => {
  it('defaults to 100 seeds of root `calibration` into the committed file, and takes each flag', () => {
    expect(parseCalibrateArguments([])).toMatchObject({ seeds: 100, root: 'calibration', out: join(PACKAGE_ROOT, YIELD_FILE) });
    expect(parseCalibrateArguments(['--seeds', '7', '--seed', 'r', '--jobs', '1', '--out', '/tmp/y.json'])).toEqual({ seeds: 7, root: 'r', jobs: 1, out: '/tmp/y.json' });
    expect(parseCalibrateArguments(['--help'])).toBe('help');
    expect(parseCalibrateArguments(['--scenario', 'a', '--scenario', 'b'])).toMatchObject({ seeds: 100, scenarios: ['a', 'b'] });
  });

  it('names what is wrong with a bad argument', () => {
    expect(() => parseCalibrateArguments(['--seeds', '0'])).toThrow("--seeds expects an integer >= 1, got 0");
    expect(() => parseCalibrateArguments(['--seeds'])).toThrow('--seeds expects an integer >= 1, got undefined');
    expect(() => parseCalibrateArguments(['--out', '--seeds'])).toThrow('--out expects a value');
    expect(() => parseCalibrateArguments(['--fast'])).toThrow("unknown argument '--fast'");
  });
});
