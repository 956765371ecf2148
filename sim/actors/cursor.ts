/**
 * Where a call lands in the event log. Checkers place each history operation exactly within the log
 * by the event cursor read right after the call committed (`ev`: every event with an id up to it was
 * committed before the call returned). The SQLite store runs a transaction to its end when the call is
 * made, before the call's promise settles, so the cursor is read at once, before any other actor can
 * run a transaction, and only then is the answer awaited.
 */
export type CursorReader = () => number;

export async function started<T>(pending: Promise<T>, cursor: CursorReader): Promise<{ result: T; ev: number }> {
  const ev = cursor();
  return { result: await pending, ev };
}
