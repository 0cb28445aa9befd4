/**
 * The zstd dictionary of a repack (docs/FORMAT.md "Format 10"): the Store's current one, or one
 * trained on a sample of the Store's small file contents, stored as an object of kind Dictionary
 * in the first transaction that writes a frame made with it (so no frame ever names a missing
 * one) and made the Store's current dictionary.
 */
import { zstdCompress } from '../native/zstd.js';
import { LayerFsError } from '../errors.js';
import { Codec, KEEP_COMPRESSED, looksRandom } from './codec.js';
import type { StoreAccess as Store } from './access.js';
import { idOf, ObjectKind } from './object-id.js';
import { currentDictionary, MIN_SAMPLES, setCurrentDictionary, trainOn, type Dictionary } from './dictionary.js';

/** Samples: small blobs picked by id order (ids are hashes, so a uniform sample), each cut to SAMPLE_MAX bytes. */
const SAMPLE_OBJECTS = 4000;
const SAMPLE_MAX = 16 * 1024;
const SAMPLE_MIN_SIZE = 256;

/** The Store's current dictionary, else one trained now (trainDictionary). */
export function repackDictionary(store: Store): Dictionary | undefined {
  return store.read(() => currentDictionary(store.db, (id, kind) => store.objects.get(id, kind))) ?? trainDictionary(store);
}

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
  const bytes = trainOn(samples);
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
  // Writers compress with it from now on.
  setCurrentDictionary(db, dict.id);
  return pack;
}
