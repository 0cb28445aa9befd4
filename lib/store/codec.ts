/**
 * Physical forms of stored objects (docs/FORMAT.md "Physical forms"): which bytes get
 * compressed, and how. Nothing here changes an object id: ids hash canonical bytes only.
 */

/** How an object's stored bytes decode (objects.codec). */
export enum Codec {
  /** The object is `length` bytes at `offset` of its pack row. */
  Raw = 0,
  /** A zstd frame is `length` bytes at `offset`; the object is `size` bytes at `at` of the decoded frame. */
  Zstd = 1,
  /**
   * A zstd frame at `offset`/`length` decodes to the object with the objects named in `base`
   * (1–DELTA_MAX_BASES ids, concatenated; more than one from format 3 on) as prefix dictionary.
   */
  Delta = 2,
  /**
   * Format 10: like Zstd (a group frame; the object is `size` bytes at `at` of it), compressed
   * with the zstd dictionary whose object id (kind Dictionary) is in `base`.
   */
  Dict = 3,
}

/**
 * zstd level of groups and chunk frames. Level 2, not 1 or 3: on 32 KiB groups of the fixtures'
 * text it compresses 4.6 % smaller than level 1 (0.360× vs 0.377×) at the same speed both ways
 * (best of 5: 102–154 vs 113–158 ms to compress 23 MB, 32–55 vs 30–50 ms to decode), and
 * smaller than level 3 (0.362×, whose import became the bottleneck on 2 busy cores: import
 * 1.5–2× raw; docs/DESIGN.md). Readers decode any level.
 */
export const COMPRESSION_LEVEL = 2;
/**
 * Content groups compressed with the Store's dictionary (on the addon's compression thread): on
 * the real-tree slice's 33 MB of small files in 32 KiB groups, level 3 stored 5.5 % less than
 * level 2 (6.85 vs 7.25 MB; 4 gained 0.5 % more, 5 and 6 cost twice the time and more).
 */
export const DICT_LEVEL = 3;
/** Deltas are small inputs written only for changed files and pages: a high level costs little there. */
export const DELTA_LEVEL = 19;
/**
 * The level of the deltas a commit writes as it stores changed small files (and rewritten tree
 * pages, against the pages they replace). Level 19 (btultra) ran at 0.5 MB/s on the 3,098
 * changed small files of a release upgrade in the real-tree fixture (61 MB: 114 s, the bulk of
 * a FUSE commit of that change), level 9 (lazy2) at 77 MB/s with
 * deltas 8.8 % larger (1.27 vs 1.17 MB, 1 % of the files' bytes either way; levels 10-12 already
 * switch to the slow strategies). On the 530 changed small files of a 6,400-file slice, level 10
 * made deltas 10 % larger than 19 (114 vs 104 KB, 0.07 % of the Store) in a tenth of the time.
 * Level 6 on the 4,556 small-file deltas of the real tree's whole release upgrade: 62 % of level
 * 9's time (656 vs 1,052 ms of CPU) for 5 % more (2.80 vs 2.65 MB, 0.06 % of what the commit
 * stores); level 4 took 36 % for 18 % more, level 3 16 % for 27 % more. Level 3 since: a
 * materialized commit of that upgrade is bound by the CPU of two cores, and level 3 took 0.5 s
 * of its ~10.5 s of CPU and 0.35 s of its time (medians 6.15 against 6.50 s) for 0.26 % more
 * Store (docs/DECISIONS.md, "A commit's small-file deltas at zstd level 3").
 * Repack, which runs offline, still writes DELTA_LEVEL with its full search.
 */
export const COMMIT_DELTA_LEVEL = 3;
/**
 * Chunk deltas (8–32 KiB pieces of an edited large file against the old chunks they overlap,
 * up to 128 KiB of dictionary) are mostly long matches and fresh literals: level 3 made the same
 * size as 19 (4,130 vs 4,119 bytes for a 4 KiB overwrite) in 0.07 instead of 0.97 ms, and a FUSE
 * commit writes several such pieces while the mount waits.
 */
export const CHUNK_DELTA_LEVEL = 3;
/** A compressed frame is kept only if it is at most this fraction of its input; otherwise raw. */
export const KEEP_COMPRESSED = 0.9;
/** A delta is kept only if it is at most this fraction of the object's size. */
export const KEEP_DELTA = 0.25;
/**
 * A small file's delta larger than KEEP_DELTA is still kept when it is at most this fraction of
 * the file compressed whole at the writer's level (with the Store's dictionary): the delta is
 * made at COMMIT_DELTA_LEVEL without the dictionary, the estimate at level 2 with it, so an
 * unrelated base (the delta then a frame of the file alone, in effect) must not pass for a delta.
 */
export const KEEP_DELTA_OF_WHOLE = 0.75;
/**
 * Tree objects (pages, roots, extent nodes) are mostly 32-byte ids and compress to 0.66–1.0 of
 * their size whole, so a delta pays up to a larger fraction: store_edit_history stored 1,400 of
 * its upper inode-table pages whole at KEEP_DELTA (docs/DESIGN.md).
 */
export const KEEP_TREE_DELTA = 0.6;
/**
 * When a delta's base already ends a chain of DELTA_MAX_DEPTH links, the new version is a delta
 * against the base's ancestor this many links from a full object (its chain is then this deep)
 * instead of a full copy: a leaf rewritten 100 times costs one full copy, not seven.
 */
export const REBASE_DEPTH = 8;
/** Deltas below this size are not tried: the group compresses them about as well. */
export const DELTA_MIN_SIZE = 64;
/**
 * A large file stored with at most this many new chunks (the rest already stored) is an edit:
 * its new chunks are grouped like small objects, so they can become deltas (ObjectWriter.putChunks).
 */
export const EDIT_CHUNKS = 8;
/**
 * A delta has at most this many bases: a re-chunked piece of an edited large file overlaps
 * two or three old chunks (8–32 KiB pieces), rarely more.
 */
export const DELTA_MAX_BASES = 4;
/** Bounds on a delta chain, so a read decodes at most this many links and bytes. */
export const DELTA_MAX_DEPTH = 16;
export const DELTA_MAX_CHAIN_BYTES = 512 * 1024;

/** `LAYERFS_COMPRESS=0` writes every object raw (benchmarks use it for the uncompressed baseline). */
export function compressionEnabled(): boolean {
  return process.env.LAYERFS_COMPRESS !== '0';
}

const SAMPLE = 512;
/** A 512-byte sample of random bytes shows ~221 distinct values; text and most binaries far fewer. */
const RANDOM_DISTINCT = 190;
const marks = new Uint32Array(256);
let stamp = 0;

/**
 * True when an evenly spaced sample of `data` looks like random bytes (already compressed or
 * encrypted), which zstd would not shrink: such objects are stored raw without trying.
 */
export function looksRandom(data: Uint8Array): boolean {
  if (data.length < 2 * SAMPLE) return false;
  if (++stamp === 0xffffffff) {
    marks.fill(0);
    stamp = 1;
  }
  const step = Math.floor(data.length / SAMPLE);
  let distinct = 0;
  for (let i = 0, at = 0; i < SAMPLE; i++, at += step) {
    const b = data[at]!;
    if (marks[b] !== stamp) {
      marks[b] = stamp;
      distinct++;
    }
  }
  return distinct > RANDOM_DISTINCT;
}
