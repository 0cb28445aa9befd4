/**
 * The gc epoch (`meta` row `gc_epoch`, format 13): every gc transaction that may delete objects
 * adds one to it. Objects a writer stored without publishing them (a mount's pre-stored content,
 * lib/fuse/prestore.ts) are garbage to gc; whoever publishes them later does so only when the
 * epoch read in the transaction that stored them is still the epoch in the transaction that
 * publishes them: no object has been deleted in between, so everything that transaction stored or
 * found stored is still there (a delta's base included). Otherwise the content is stored again.
 */
import type { Db } from './store-file.js';

const KEY = 'gc_epoch';

/** The epoch now (0 before the first gc of format 13), read inside the caller's transaction. */
export function gcEpoch(db: Db): number {
  const v = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(KEY) as string | undefined;
  const n = v === undefined ? 0 : Number(v);
  return Number.isSafeInteger(n) ? n : -1;
}

/** One more transaction that may delete objects (inside it, before any deletion). */
export function advanceGcEpoch(db: Db): void {
  const next = gcEpoch(db) + 1;
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, String(next <= 0 ? 1 : next));
}
