/**
 * The Store's current zstd dictionary (format 10, docs/FORMAT.md): the meta row `dictionary`
 * names the object writers compress content groups with. A large transaction that finds none
 * trains one from a sample of what it wrote (DictionarySampler) for the transactions after it;
 * `db repack` uses it too, or trains and records one.
 */
import { BackgroundTraining } from '../native/zstd-train-thread.js';
import { zstdTrainDictionary } from '../native/zstd-dict.js';
import { LayerFsError } from '../errors.js';
import { looksRandom } from './codec.js';
import { ObjectKind } from './object-id.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './store-file.js';

/** A zstd dictionary object: its id and canonical bytes (the dictionary itself). */
export interface Dictionary {
  id: Buffer;
  bytes: Buffer;
}

const KEY = 'dictionary';
/** Dictionaries read per connection: one read (and re-hash) per connection and dictionary. */
const loaded = new WeakMap<Db, Dictionary>();

/** The meta lookup, prepared once per connection: every write transaction asks it. */
const META_VALUE = new WeakMap<Db, Statement>();
function metaValue(db: Db): Statement {
  let st = META_VALUE.get(db);
  if (!st) {
    st = db.prepare('SELECT value FROM meta WHERE key = ?').pluck();
    META_VALUE.set(db, st);
  }
  return st;
}

/**
 * The Store's current dictionary, if it has one and the object is there (gc removes one no
 * frame uses). Call inside the transaction that will write frames made with it.
 */
export function currentDictionary(db: Db, read: (id: Buffer, kind: ObjectKind) => Buffer): Dictionary | undefined {
  const hex = metaValue(db).get(KEY) as string | undefined;
  if (!hex) return undefined;
  const id = Buffer.from(hex, 'hex');
  if (db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck().get(id) === undefined) return undefined;
  const held = loaded.get(db);
  if (held?.id.equals(id)) return held;
  try {
    const dict = { id, bytes: read(id, ObjectKind.Dictionary) };
    loaded.set(db, dict);
    return dict;
  } catch (e) {
    // A damaged dictionary is no dictionary: new frames are written without one.
    if (e instanceof LayerFsError) return undefined;
    throw e;
  }
}

/** Whether the Store names a current dictionary. */
export function hasDictionary(db: Db): boolean {
  return metaValue(db).get(KEY) !== undefined;
}

/** Makes `id` (a Dictionary object stored in this transaction or before) the Store's current one. */
export function setCurrentDictionary(db: Db, id: Buffer): void {
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, id.toString('hex'));
}

/**
 * Dictionary size. On the 8,878 small files of the real-tree slice (docs/BENCHMARKS.md) in 32
 * KiB groups at level 2, a dictionary trained on the first 4,000 (cut to 16 KiB) stored them in
 * 7.25 MB at 256 KiB, 7.34 MB at 192 KiB, 7.53 MB at 112 KiB (zstd's default), 8.55 MB without.
 */
export const DICTIONARY_BYTES = 256 * 1024;
/**
 * fastCover's segment size: one training pass with it (native/napi_zstd_dict.cc) stored the slice
 * as small as ZDICT's own parameter search (7.880 vs 7.879 MB; k = 500 and 2,000 within 0.3 %)
 * in a third of the time.
 */
export const SEGMENT = 1000;
/** Fewer samples than this train no useful dictionary. */
export const MIN_SAMPLES = 64;
/**
 * ZDICT wants about 100× a dictionary's size in samples; a small sample gets a dictionary of
 * at most 1/16 of its bytes, and none below MIN_DICTIONARY_BYTES.
 */
const SAMPLE_RATIO = 16;
const MIN_DICTIONARY_BYTES = 4096;

/** A dictionary trained on `samples`, or undefined (too few, or no ZDICT on this system). */
export function trainOn(samples: Buffer[]): Buffer | undefined {
  const input = trainingInput(samples);
  return input ? (zstdTrainDictionary(input.data, input.sizes, input.capacity, SEGMENT) ?? undefined) : undefined;
}

/** trainOn(samples) on a worker thread (BackgroundTraining: the same dictionary), or undefined when `samples` train none. */
export function trainInBackground(samples: Buffer[]): BackgroundTraining | undefined {
  const input = trainingInput(samples);
  return input ? new BackgroundTraining(input.data, input.sizes, input.capacity, SEGMENT) : undefined;
}

function trainingInput(samples: Buffer[]): { data: Buffer; sizes: Uint32Array; capacity: number } | undefined {
  const total = samples.reduce((n, s) => n + s.length, 0);
  const capacity = Math.min(DICTIONARY_BYTES, Math.floor(total / SAMPLE_RATIO));
  if (samples.length < MIN_SAMPLES || capacity < MIN_DICTIONARY_BYTES) return undefined;
  return { data: Buffer.concat(samples, total), sizes: Uint32Array.from(samples.map((s) => s.length)), capacity };
}

/** Small content objects seen before a transaction trains (an import's first thousands of files would be one package). */
export const SAMPLER_MIN_SEEN = 2000;
const SAMPLER_KEEP = 1000;
const SAMPLER_MAX_BYTES = 4096;

/**
 * A uniform sample (reservoir, deterministic) of the small file contents one transaction
 * writes, each cut to SAMPLER_MAX_BYTES: ~4 MB, which ZDICT trains on in about a second.
 */
export class DictionarySampler {
  private readonly kept: Buffer[] = [];
  /** Small contents offered that count as samples. */
  seen = 0;
  private state = 0x9e3779b9;

  offer(data: Uint8Array): void {
    if (data.length < 256 || looksRandom(data)) return;
    this.seen++;
    let slot = this.kept.length;
    if (slot >= SAMPLER_KEEP) {
      // xorshift32: the same writes keep the same sample.
      this.state ^= this.state << 13;
      this.state ^= this.state >>> 17;
      this.state ^= this.state << 5;
      slot = (this.state >>> 0) % this.seen;
      if (slot >= SAMPLER_KEEP) return;
    }
    this.kept[slot] = Buffer.from(data.subarray(0, SAMPLER_MAX_BYTES));
  }

  /** The dictionary of what was offered, once enough was (`minSeen` offers; trainOn's bounds always). */
  train(minSeen = SAMPLER_MIN_SEEN): Buffer | undefined {
    return this.seen >= minSeen ? trainOn(this.kept) : undefined;
  }
}
