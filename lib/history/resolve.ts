/**
 * Turning what a user typed (a full id, an unambiguous hex prefix, or a name) into one row.
 */
import { LayerFsError } from '../errors.js';
import { parseHexPrefix, toHex } from '../format/hex.js';

/** How many matching ids an ambiguity error lists in `details.candidates`. */
export const MAX_CANDIDATES = 10;

/**
 * Lists the ids between `lo` and `hi` (inclusive, ascending, at most `limit`). Each table's owner
 * writes this query for its own table, so the prefix rules below stay in one place while no tier
 * runs SQL on a table it does not own.
 */
export type IdsBetween = (lo: Buffer, hi: Buffer, limit: number) => Buffer[];

/** The `limit` first ids (of `bytes` bytes) that start with the hex `prefix` (2 detect ambiguity). */
export function idsWithPrefix(prefix: string, bytes: number, limit: number, between: IdsBetween): Buffer[] {
  const lo = Buffer.from(prefix.padEnd(bytes * 2, '0').slice(0, bytes * 2), 'hex');
  const hi = Buffer.from(prefix.padEnd(bytes * 2, 'f').slice(0, bytes * 2), 'hex');
  return between(lo, hi, limit);
}

/** The one id `text` (4 or more hex digits) is a prefix of; several are ERR_AMBIGUOUS_ID. */
export function uniqueByPrefix(text: string, bytes: number, what: string, between: IdsBetween): Buffer | undefined {
  if (!/^[0-9a-fA-F]{4,}$/.test(text) || text.length > bytes * 2) return undefined;
  const prefix = parseHexPrefix(text, what);
  const ids = idsWithPrefix(prefix, bytes, MAX_CANDIDATES + 1, between);
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
