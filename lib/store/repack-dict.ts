/**
 * The zstd dictionary of a repack (docs/FORMAT.md "Format 10"): trained once per run on a
 * sample of the Store's small file contents and stored as an object of kind Dictionary in the
 * first transaction that writes a frame made with it, so no frame ever names a missing one.
 */
import { zstdCompress, zstdTrainDictionary } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { Codec, KEEP_COMPRESSED, looksRandom } from './codec.js';
import type { Store } from './handle.js';
import { idOf, ObjectKind } from './object-id.js';
import type { Dictionary } from './repack-rows.js';

/**
 * Dictionary size. zstd's default (110 KB) rounded up to whole KiB: on 8,700 small files of the
 * real-tree fixture a trained dictionary stored their 32 KiB groups 6–8 % and their 128 KiB
 * groups 0.6–3 % smaller at levels 9–19.
 */
export const DICTIONARY_BYTES = 112 * 1024;
/** Samples: small blobs picked by id order (ids are hashes, so a uniform sample), each cut to SAMPLE_MAX bytes. */
const SAMPLE_OBJECTS = 4000;
const SAMPLE_MAX = 16 * 1024;
const SAMPLE_MIN_SIZE = 256;
/** Fewer samples than this train no useful dictionary. */
const MIN_SAMPLES = 64;
/**
 * ZDICT wants about 100× a dictionary's size in samples; a small Store gets a dictionary of at
 * most 1/16 of its sample bytes, and none below MIN_DICTIONARY_BYTES.
 */
const SAMPLE_RATIO = 16;
const MIN_DICTIONARY_BYTES = 4096;

/** A dictionary for the Store's small objects, or undefined (too few samples, or no ZDICT on this system). */
export function trainDictionary(store: Store): Dictionary | undefined {
  const picks = store.read(
    () =>
      store.db
        .prepare('SELECT id FROM objects WHERE kind = ? AND codec <> ? AND size BETWEEN ? AND 131071 LIMIT ?')
        .pluck()
        .all(ObjectKind.Blob, Codec.Delta, SAMPLE_MIN_SIZE, SAMPLE_OBJECTS) as Buffer[],
  );
  if (picks.length < MIN_SAMPLES) return undefined;
  const samples: Buffer[] = [];
  for (const id of picks) {
    let data: Buffer;
    try {
      data = store.objects.get(id, ObjectKind.Blob);
    } catch (e) {
      // Damage is verify's to report; a damaged sample is just not a sample.
      if (e instanceof LayerFsError) continue;
      throw e;
    }
    if (!looksRandom(data)) samples.push(data.subarray(0, SAMPLE_MAX));
  }
  const total = samples.reduce((n, s) => n + s.length, 0);
  const capacity = Math.min(DICTIONARY_BYTES, Math.floor(total / SAMPLE_RATIO));
  if (samples.length < MIN_SAMPLES || capacity < MIN_DICTIONARY_BYTES) return undefined;
  const bytes = zstdTrainDictionary(Buffer.concat(samples, total), Uint32Array.from(samples.map((s) => s.length)), capacity);
  return bytes ? { id: idOf(ObjectKind.Dictionary, bytes), bytes } : undefined;
}

/**
 * Stores `dict` as an object unless it is there; call inside the transaction that uses it.
 * Returns the pack row written (a repacked row), if any.
 */
export function ensureDictionary(store: Store, dict: Dictionary): number | undefined {
  const db = store.db;
  if (db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck().get(dict.id) !== undefined) return undefined;
  const z = zstdCompress(dict.bytes, 19);
  const zipped = z.length <= dict.bytes.length * KEEP_COMPRESSED;
  const pack = Number(db.prepare('INSERT INTO packs (data) VALUES (?)').run(zipped ? z : dict.bytes).lastInsertRowid);
  db.prepare('INSERT INTO objects (id, kind, size, codec, pack, offset, length, at, base) VALUES (?, ?, ?, ?, ?, 0, ?, 0, NULL)').run(
    dict.id,
    ObjectKind.Dictionary,
    dict.bytes.length,
    zipped ? Codec.Zstd : Codec.Raw,
    pack,
    zipped ? z.length : dict.bytes.length,
  );
  return pack;
}
