import { describe, expect, it } from 'vitest';
import { importOptional, isMissingPackage, requireOptional, requirePackages } from './optional-packages.ts';
import { LeaseholdError, MissingDependencyError } from './queue/errors.ts';
import { pgDriver } from './store/pg-driver.ts';
import { thrownBy } from './store/__test-helpers__/thrown.ts';

/** An error as Node's require (MODULE_NOT_FOUND) or import (ERR_MODULE_NOT_FOUND) throws it for a missing package. */
function notFound(code: 'MODULE_NOT_FOUND' | 'ERR_MODULE_NOT_FOUND', name: string): Error {
  const message = code === 'MODULE_NOT_FOUND' ? `Cannot find module '${name}'\nRequire stack:\n- /app/x.js` : `Cannot find package '${name}' imported from /app/x.js`;
  return Object.assign(new Error(message), { code });
}

describe('MissingDependencyError', () => {
  it('names the package, what needed it and the command that installs it', () => {
    const error = new MissingDependencyError('PostgreSQL', ['pg']);
    expect(error).toBeInstanceOf(LeaseholdError);
    expect(error.name).toBe('MissingDependencyError');
    expect(error.code).toBe('missing_dependency');
    expect(error.message).toBe('leasehold: PostgreSQL needs the "pg" package: npm install pg');
    expect([error.packageName, error.packageNames, error.feature]).toEqual(['pg', ['pg'], 'PostgreSQL']);
    expect(error.cause).toBeUndefined();
  });

  it('lists several packages in one install command, and keeps the cause it is given', () => {
    const cause = new Error('not found');
    expect(new MissingDependencyError('leasehold check', ['zod', 'seedrandom'], { cause })).toMatchObject({
      message: 'leasehold: leasehold check needs the "zod" and "seedrandom" packages: npm install zod seedrandom',
      packageName: 'zod',
      cause,
    });
    const three = new MissingDependencyError('x', ['a', 'b', 'c']);
    expect(three.message).toBe('leasehold: x needs the "a", "b" and "c" packages: npm install a b c');
    expect(Object.isFrozen(three.packageNames)).toBe(true);
  });
});

describe('isMissingPackage', () => {
  it("is true for Node's not-found errors naming the package itself", () => {
    expect(isMissingPackage(notFound('MODULE_NOT_FOUND', 'pg'), 'pg')).toBe(true);
    expect(isMissingPackage(notFound('ERR_MODULE_NOT_FOUND', '@electric-sql/pglite'), '@electric-sql/pglite')).toBe(true);
    expect(isMissingPackage(Object.assign(new Error('Cannot find package "zod"'), { code: 'ERR_MODULE_NOT_FOUND' }), 'zod')).toBe(true);
  });

  it('is false for a module the package itself needs, another code, or no error object', () => {
    expect(isMissingPackage(notFound('MODULE_NOT_FOUND', 'pg-pool'), 'pg')).toBe(false);
    expect(isMissingPackage(Object.assign(new Error("Cannot find module 'pg'"), { code: 'ERR_REQUIRE_ESM' }), 'pg')).toBe(false);
    expect(isMissingPackage({ code: 'MODULE_NOT_FOUND' }, 'pg')).toBe(false);
    expect(isMissingPackage("Cannot find module 'pg'", 'pg')).toBe(false);
    expect(isMissingPackage(null, 'pg')).toBe(false);
  });
});

describe('requireOptional', () => {
  it('returns what the loader gives', () => {
    expect(requireOptional('pg', 'PostgreSQL', (name) => ({ name }))).toEqual({ name: 'pg' });
  });

  it('turns a missing package into MissingDependencyError, with the loader error as its cause', () => {
    const missing = notFound('MODULE_NOT_FOUND', 'pg');
    const error = thrownBy(() => requireOptional('pg', 'PostgreSQL', () => { throw missing; }));
    expect(error).toBeInstanceOf(MissingDependencyError);
    expect(error).toMatchObject({ packageName: 'pg', message: 'leasehold: PostgreSQL needs the "pg" package: npm install pg', cause: missing });
  });

  it('rethrows any other failure as it is (a broken install is not a missing one)', () => {
    const nested = notFound('MODULE_NOT_FOUND', 'pg-pool');
    expect(thrownBy(() => requireOptional('pg', 'PostgreSQL', () => { throw nested; }))).toBe(nested);
  });

  it("uses Node's require by default: a package that does not exist is missing, one that does loads", () => {
    const error = thrownBy(() => requireOptional('leasehold-no-such-package', 'a test'));
    expect(error).toMatchObject({ name: 'MissingDependencyError', packageName: 'leasehold-no-such-package' });
    expect(requireOptional<{ Pool: unknown }>('pg', 'PostgreSQL').Pool).toBeTypeOf('function');
  });
});

describe('importOptional', () => {
  it('resolves to what the loader gives', async () => {
    await expect(importOptional('prom-client', 'metrics', async (name) => ({ name }))).resolves.toEqual({ name: 'prom-client' });
  });

  it('rejects with MissingDependencyError for a missing package, and with the error itself otherwise', async () => {
    await expect(importOptional('prom-client', 'Prometheus text', () => Promise.reject(notFound('ERR_MODULE_NOT_FOUND', 'prom-client')))).rejects.toMatchObject({
      name: 'MissingDependencyError',
      message: 'leasehold: Prometheus text needs the "prom-client" package: npm install prom-client',
    });
    const broken = new SyntaxError('Unexpected token');
    await expect(importOptional('prom-client', 'Prometheus text', () => Promise.reject(broken))).rejects.toBe(broken);
  });

  it('uses a dynamic import by default', async () => {
    await expect(importOptional('leasehold-no-such-package', 'a test')).rejects.toBeInstanceOf(MissingDependencyError);
    const client = await importOptional<{ Registry: { PROMETHEUS_CONTENT_TYPE: string } }>('prom-client', 'metrics');
    expect(client.Registry.PROMETHEUS_CONTENT_TYPE).toMatch(/^text\/plain/);
  });
});

describe('requirePackages', () => {
  const resolver = (installed: string[]) => (name: string) => {
    if (name === 'esm-only') throw Object.assign(new Error(`No "exports" main defined in /app/node_modules/esm-only/package.json`), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
    if (!installed.includes(name)) throw notFound('MODULE_NOT_FOUND', name);
    return `/app/node_modules/${name}/index.js`;
  };

  it('passes when every package resolves, or is there but refuses require', () => {
    expect(() => requirePackages('the harness', ['zod', 'seedrandom', 'esm-only'], resolver(['zod', 'seedrandom']))).not.toThrow();
  });

  it('names every missing package in one error', () => {
    expect(thrownBy(() => requirePackages('leasehold check', ['zod', 'seedrandom', 'esm-only'], resolver([])))).toMatchObject({
      name: 'MissingDependencyError',
      packageNames: ['zod', 'seedrandom'],
      message: 'leasehold: leasehold check needs the "zod" and "seedrandom" packages: npm install zod seedrandom',
    });
    expect(thrownBy(() => requirePackages('leasehold check', ['zod', 'seedrandom'], resolver(['zod'])))).toMatchObject({ packageNames: ['seedrandom'] });
  });

  it("resolves with Node's resolution by default, loading nothing", () => {
    expect(() => requirePackages('the harness', ['zod', 'seedrandom'])).not.toThrow();
    expect(thrownBy(() => requirePackages('a test', ['leasehold-no-such-package']))).toBeInstanceOf(MissingDependencyError);
  });
});

describe('pgDriver', () => {
  it('is loaded on first use: missing, it is a MissingDependencyError; once loaded, it is kept', () => {
    expect(thrownBy(() => pgDriver(() => { throw notFound('MODULE_NOT_FOUND', 'pg'); }))).toMatchObject({
      name: 'MissingDependencyError',
      message: 'leasehold: PostgreSQL needs the "pg" package: npm install pg',
    });
    const pg = pgDriver();
    expect(pg.Pool).toBeTypeOf('function');
    expect(pgDriver(() => { throw new Error('not asked again'); })).toBe(pg);
  });
});
