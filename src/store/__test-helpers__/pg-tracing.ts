/** What a test of the PostgreSQL store's round trips needs: the texts its pg clients sent. */
import pg from 'pg';

/** Runs `work` and returns its result with the text of every query a pg client sent meanwhile, in order. */
export async function tracing<T>(work: () => Promise<T>): Promise<{ result: T; sent: string[] }> {
  const sent: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text: string };
    sent.push(typeof config === 'string' ? config : config.text);
    return (original as (...a: unknown[]) => Promise<unknown>).apply(this, args);
  } as typeof original;
  try {
    return { result: await work(), sent };
  } finally {
    pg.Client.prototype.query = original;
  }
}

/** Statements prepared for batches on first use on a connection are round trips of their own: counted apart. */
export const preparing = (text: string) => /^(BEGIN;(\s*SET LOCAL [^;]*;)?\s*)?PREPARE /.test(text);
