/**
 * Format 12 (docs/FORMAT.md): an `objects` row of a frame compressed with a zstd dictionary
 * (codec 3) names its dictionary in `base` by a short ref (1–2 bytes) into the `dictionaries`
 * table instead of the dictionary's 32-byte id, which every such row repeated (~31 bytes of a
 * ~110-byte row). Rows written by format 11 and earlier keep the id itself; a `base` of 32 bytes
 * is always an id. Everything above the index (readers, remotes, gc) sees ids: refs are resolved
 * where rows are read (resolveBase) and made where rows are written (storedBases).
 *
 * A ref is the big-endian number N ≥ 1 in 1 byte (N < 256) or 2 bytes (N < 65,536), without a
 * leading zero byte. Refs are never reused: a dictionaries row is never deleted, even after gc
 * removed its dictionary (a later import of the same dictionary finds its old ref).
 */
import { LayerFsError } from '../errors.js';
import { Codec } from './codec.js';
import { LAZY_TABLES } from './schema.js';
import { prepared, type Db } from './store-file.js';
import type { Dictionary } from './dictionary.js';

/** Refs of dictionaries at most (2 bytes). */
export const MAX_DICTIONARY_REFS = 0xffff;

/**
 * ref (latin1) → dictionary id, per connection, as read outside a transaction (a ref a
 * transaction made goes again with its rollback, so nothing read inside one is kept).
 */
const known = new WeakMap<Db, Map<string, Buffer>>();

function cacheOf(db: Db): Map<string, Buffer> {
  let m = known.get(db);
  if (!m) known.set(db, (m = new Map()));
  return m;
}

/** The ref of number `n` (1 to MAX_DICTIONARY_REFS). */
export function encodeRef(n: number): Buffer {
  return n < 256 ? Buffer.from([n]) : Buffer.from([n >> 8, n & 0xff]);
}

/** The number a ref stands for, or undefined when `ref` is not one (damage). */
export function decodeRef(ref: Uint8Array): number | undefined {
  if (ref.length === 1 && ref[0]! > 0) return ref[0]!;
  if (ref.length === 2 && ref[0]! > 0) return (ref[0]! << 8) | ref[1]!;
  return undefined;
}

/** Whether the Store has the dictionaries table (made on first use). */
export function hasTable(db: Db): boolean {
  return prepared(db, "SELECT 1 FROM main.sqlite_schema WHERE type = 'table' AND name = 'dictionaries'").get() !== undefined;
}

/** The dictionary id `ref` names in this Store, or undefined (no such ref: damage). */
export function dictionaryIdOf(db: Db, ref: Buffer): Buffer | undefined {
  const cache = cacheOf(db);
  const key = ref.toString('latin1');
  const hit = cache.get(key);
  if (hit) return hit;
  if (decodeRef(ref) === undefined || !hasTable(db)) return undefined;
  const id = prepared(db, 'SELECT id FROM dictionaries WHERE ref = ?', 'pluck').get(ref) as Buffer | undefined;
  if (!id || id.length !== 32) return undefined;
  if (!db.inTransaction) cache.set(key, id);
  return id;
}

/**
 * `base` as the rest of the code knows it: for a codec-3 row with a ref, the dictionary's id
 * (an empty buffer when the ref names nothing, which readers report as a damaged dictionary).
 */
export function resolveBase(db: Db, codec: number, base: Buffer | null): Buffer | null {
  if (codec !== Codec.Dict || !base || base.length === 32) return base;
  return dictionaryIdOf(db, base) ?? Buffer.alloc(0);
}

/** resolveBase on a row with `codec` and `base`, in place; returns the row. */
export function resolveRow<T extends { codec: number; base: Buffer | null }>(db: Db, row: T): T {
  if (row.codec === Codec.Dict && row.base && row.base.length !== 32) row.base = resolveBase(db, row.codec, row.base);
  return row;
}

/**
 * The ref of dictionary `id` (or the id itself, once MAX_DICTIONARY_REFS are taken), made (with the table, on first use) if the Store has none yet:
 * call inside the write transaction that writes the rows naming it.
 */
export function dictionaryRef(db: Db, id: Buffer): Buffer {
  if (id.length !== 32) throw new LayerFsError('ERR_CORRUPT', `a dictionary id must be 32 bytes, got ${id.length}`, { hint: 'run layerfs verify' });
  if (!hasTable(db)) db.exec(LAZY_TABLES.dictionaries);
  const found = prepared(db, 'SELECT ref FROM dictionaries WHERE id = ?', 'pluck').get(id) as Buffer | undefined;
  if (found) return found;
  let max = 0;
  for (const r of db.prepare('SELECT ref FROM dictionaries').pluck().iterate() as IterableIterator<Buffer>) max = Math.max(max, decodeRef(r) ?? 0);
  // Past the last ref, rows name the dictionary by its id, as before format 12.
  if (max >= MAX_DICTIONARY_REFS) return id;
  const ref = encodeRef(max + 1);
  db.prepare('INSERT INTO dictionaries (ref, id) VALUES (?, ?)').run(ref, id);
  return ref;
}


/** Forgets the refs this connection resolved (after a rollback, which may take refs away). */
export function forgetDictionaryRefs(db: Db): void {
  known.delete(db);
}

/**
 * `base` as rows store it, for the rows of one frame or pack row: a codec-3 row's dictionary id
 * becomes its ref (dictionaryRef), looked up once per dictionary rather than once per row (a
 * lookup is a schema probe and a SELECT). Use within one write transaction.
 */
export function storedBases(db: Db): (codec: number, base: Buffer | null) => Buffer | null {
  const refs = new Map<string, Buffer>();
  return (codec, base) => {
    if (codec !== Codec.Dict || !base || base.length !== 32) return base;
    const key = base.toString('latin1');
    let ref = refs.get(key);
    if (!ref) refs.set(key, (ref = dictionaryRef(db, base)));
    return ref;
  };
}

/**
 * The dictionary a codec-3 row names by `base` (ref or id), read by `read` (which must
 * authenticate it against its id) once per `cache`, keyed by `base`; null when it cannot be read,
 * remembered too, so a reader falls back once per dictionary and not once per chunk (the
 * fallback reports why).
 */
export function loadDictionary(db: Db, base: Buffer | null, read: (id: Buffer) => Buffer, cache: Map<string, Dictionary | null>): Dictionary | null {
  if (!base) return null;
  const key = base.toString('latin1');
  let d = cache.get(key);
  if (d !== undefined) return d;
  d = null;
  const id = resolveBase(db, Codec.Dict, base);
  if (id && id.length === 32) {
    try {
      d = { id: Buffer.from(id), bytes: read(id) };
    } catch (e) {
      if (!(e instanceof LayerFsError)) throw e;
    }
  }
  cache.set(key, d);
  return d;
}
