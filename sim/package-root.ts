import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The root of the leasehold package: the nearest directory above this module holding a package.json.
 * In the repository that is the checkout (this file is sim/package-root.ts); in an installed package
 * it is node_modules/leasehold (this file is compiled to dist/sim/package-root.js). The scenario
 * catalogue, package.json and git are found from here, never from the working directory.
 */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(from: string): string {
  for (let directory = from; ; directory = dirname(directory)) {
    if (existsSync(join(directory, 'package.json'))) return directory;
    if (dirname(directory) === directory) return join(from, '..');
  }
}
