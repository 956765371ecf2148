import { describe, expect, it } from 'vitest';
import { catalogueScenario } from '../scenarios/registry.ts';
import { checkDeterminism, sameSeedSameTrace } from './i14-determinism.ts';

const mixed = catalogueScenario('mixed');

describe('I14 determinism', () => {
  it('passes equal hashes and fails different ones', () => {
    expect(checkDeterminism('abc', 'abc')).toEqual([]);
    const [violation] = checkDeterminism('abc', 'abd', 'mixed seed 7');
    expect(violation).toMatchObject({ invariant: 'I14', kind: 'safety' });
    expect(violation!.message).toMatch(/mixed seed 7 gave two trace hashes, abc and abd/);
  });

  it('runs one seed twice and finds the same trace', async () => {
    const { hashA, hashB, violations } = await sameSeedSameTrace(mixed, '7');
    expect(hashA).toMatch(/^[0-9a-f]{64}$/);
    expect(hashB).toBe(hashA);
    expect(violations).toEqual([]);
  });

  it('runs one seed twice on pglite (the PostgreSQL store on PGlite, P6) and finds the same trace', async () => {
    const { hashA, hashB, violations } = await sameSeedSameTrace(catalogueScenario('tool-graph'), '2', undefined, 'pglite');
    expect(hashA).toMatch(/^[0-9a-f]{64}$/);
    expect(hashB).toBe(hashA);
    expect(violations).toEqual([]);
  });
});
