/**
 * Turning what a user typed (a full id, an unambiguous hex prefix, or a name) into one row.
 */
import { LayerFsError } from '../errors.js';
import { parseHexPrefix } from '../format/hex.js';
import type { Db } from '../store/index.js';

/** Rows of `table` whose id starts with the hex `prefix` (at most 2: enough to detect ambiguity). */
export function idsWithPrefix(db: Db, table: string, prefix: string, bytes: number): Buffer[] {
  const lo = Buffer.from(prefix.padEnd(bytes * 2, '0').slice(0, bytes * 2), 'hex');
  const hi = Buffer.from(prefix.padEnd(bytes * 2, 'f').slice(0, bytes * 2), 'hex');
  return db.prepare(`SELECT id FROM ${table} WHERE id BETWEEN ? AND ? LIMIT 2`).pluck().all(lo, hi) as Buffer[];
}

export function uniqueByPrefix(db: Db, table: string, text: string, bytes: number, what: string): Buffer | undefined {
  if (!/^[0-9a-fA-F]{4,}$/.test(text) || text.length > bytes * 2) return undefined;
  const prefix = parseHexPrefix(text, what);
  const ids = idsWithPrefix(db, table, prefix, bytes);
  if (ids.length > 1) {
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `${what} id prefix ${text} matches several ${what}s`, { id: text, hint: 'give more hex digits' });
  }
  return ids[0];
}
