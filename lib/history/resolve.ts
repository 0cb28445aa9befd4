/**
 * Turning what a user typed (a full id, an unambiguous hex prefix, or a name) into one row.
 */
import { LayerFsError } from '../errors.js';
import { parseHexPrefix, toHex } from '../format/hex.js';
import type { Db } from '../store/index.js';

/** How many matching ids an ambiguity error lists in `details.candidates`. */
export const MAX_CANDIDATES = 10;

/** Rows of `table` whose id starts with the hex `prefix` (at most `limit`: 2 detect ambiguity). */
export function idsWithPrefix(db: Db, table: string, prefix: string, bytes: number, limit = 2): Buffer[] {
  const lo = Buffer.from(prefix.padEnd(bytes * 2, '0').slice(0, bytes * 2), 'hex');
  const hi = Buffer.from(prefix.padEnd(bytes * 2, 'f').slice(0, bytes * 2), 'hex');
  return db.prepare(`SELECT id FROM ${table} WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?`).pluck().all(lo, hi, limit) as Buffer[];
}

export function uniqueByPrefix(db: Db, table: string, text: string, bytes: number, what: string): Buffer | undefined {
  if (!/^[0-9a-fA-F]{4,}$/.test(text) || text.length > bytes * 2) return undefined;
  const prefix = parseHexPrefix(text, what);
  const ids = idsWithPrefix(db, table, prefix, bytes, MAX_CANDIDATES + 1);
  if (ids.length > 1) {
    // The candidates let a caller (or an agent) pick one without another query.
    const candidates = ids.slice(0, MAX_CANDIDATES).map(toHex);
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `${what} id prefix ${text} matches several ${what}s: ${candidates.join(', ')}${ids.length > MAX_CANDIDATES ? ', …' : ''}`, {
      id: text,
      candidates,
      hint: 'give more hex digits',
    });
  }
  return ids[0];
}

export interface RemoteRefTarget {
  kind: 'layerstack' | 'branch';
  /** LayerStack: its head Layer; Branch: its head Commit (null before its first Commit). */
  head: Buffer | null;
  baseLayerId: Buffer | null;
}

/**
 * `REMOTE/NAME`: the head a remote had for a LayerStack or Branch of that name at the last fetch
 * or push (names cannot hold '/', so nothing else is read this way). LayerStacks come first.
 */
export function resolveRemoteRef(db: Db, ref: string, kinds: ('layerstack' | 'branch')[] = ['layerstack', 'branch']): RemoteRefTarget | undefined {
  const m = /^([^/]+)\/([^/]+)$/.exec(ref);
  if (!m || !db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'remote_refs'`).get()) return undefined;
  for (const kind of kinds) {
    const rows = db.prepare('SELECT head, base_layer_id AS baseLayerId FROM remote_refs WHERE remote = ? AND kind = ? AND name = ?').all(m[1], kind, m[2]) as { head: Buffer | null; baseLayerId: Buffer | null }[];
    if (rows.length > 1) throw new LayerFsError('ERR_AMBIGUOUS_ID', `several LayerStacks on ${m[1]} have a Branch named ${m[2]}`, { id: ref, hint: 'give the Commit id instead' });
    if (rows[0]) return { kind, ...rows[0] };
  }
  return undefined;
}
