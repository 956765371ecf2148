/**
 * A record's own value at `key`, or undefined. Tenants, budgets and reasons are caller input, so a key
 * such as `constructor` or `__proto__` must be read as data, never as what Object.prototype holds there.
 */
export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
