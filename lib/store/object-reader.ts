/**
 * Authenticated reads of stored objects: whatever the physical form (docs/FORMAT.md "Physical
 * forms"), every returned byte has been decoded and re-hashed against its id.
 */
import { objectId } from '../native/hash.js';
import { zstdDecompress } from '../native/zstd.js';
import { zstdDictDecompress } from '../native/zstd-dict.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Codec, DELTA_MAX_BASES, DELTA_MAX_DEPTH } from './codec.js';
import { prepared, type Db } from './store-file.js';
import { mapSqliteError } from './sqlite-errors.js';
import { deltaBases, DOMAIN_TAGS, ObjectKind, type Locator } from './object-id.js';
import { forgetDictionaryRefs, resolveBase, resolveRow } from './dictionary-refs.js';
import type { Dictionary } from './dictionary.js';

/** Bytes of delta bases an ObjectReader keeps decoded (ObjectReader.baseOf). */
const BASE_CACHE_BYTES = 4 * 1024 * 1024;

/** Bytes of remembered objects an ObjectReader keeps (ObjectReader.remember). */
const RECENT_BYTES = 4 * 1024 * 1024;

/** Locators looked up in one statement by prefetch(). */
const PREFETCH_BATCH = 64;

/** A read follows at most this many delta links (writers make at most DELTA_MAX_DEPTH). */
const MAX_READ_DEPTH = 2 * DELTA_MAX_DEPTH;

/** Authenticated reads: every returned byte has been decoded and re-hashed against its id. */
export class ObjectReader {
  private readonly locate;
  private readonly readPack;
  private readonly readPart;
  /** A few recent packs: sequential reads of a large file touch each pack many times. */
  private readonly packs = new Map<number, Buffer>();
  /** A few recently decoded frames: neighbouring small files usually share a group. */
  private readonly frames = new Map<string, Buffer>();
  /**
   * Recently used delta bases: consecutive new chunks of a changed large file share old chunks
   * as bases, and versions of one file share their chain. `checked`: re-hashed against the id
   * when decoded (a strict read, or a dictionary); otherwise authenticated only through the
   * object read with it. Objects a caller asks for are decoded and re-hashed on every read.
   */
  private readonly bases = new Map<string, { data: Buffer; checked: boolean }>();
  private basesBytes = 0;
  /** Locators of objects a caller is about to read (prefetch), taken once each by the read. */
  private readonly ahead = new Map<string, Located>();
  private readonly locateBatch;
  /** The rest of a delta chain, locators and stored bytes, in one statement (fetchChain). */
  private readonly locateChain;
  /**
   * Set while a read decodes delta bases without re-hashing them (the object it returns is
   * re-hashed, which authenticates every byte): a read that fails then is read again with
   * every link re-hashed, so the error names the damaged object itself.
   */
  private strict = false;
  private basesUsed = false;
  /**
   * Canonical bytes of objects this handle has just written or read ahead (remember), by id, at
   * most RECENT_BYTES: the tree pages a commit writes are the first the next commit of the same
   * Workspace reads, and its delta bases are read before the write lock is taken.
   */
  private readonly recent = new Map<string, { kind: ObjectKind; data: Buffer }>();
  private recentBytes = 0;

  constructor(
    private readonly db: Db,
    private readonly path: string,
  ) {
    // A format-1 Store opened read-only is not upgraded: its objects are all raw.
    const v2 = (db.pragma('user_version', { simple: true }) as number) >= 2;
    this.locate = prepared(db, `SELECT kind, size, codec, pack, offset, length, ${v2 ? 'at, base' : '0 AS at, NULL AS base'} FROM objects WHERE id = ?`);
    this.readPack = prepared(db, 'SELECT data FROM packs WHERE id = ?', 'pluck');
    this.readPart = prepared(db, 'SELECT substr(data, ?, ?) FROM packs WHERE id = ?', 'pluck');
    const marks = Array.from({ length: PREFETCH_BATCH }, () => '?').join(', ');
    this.locateBatch = prepared(db, `SELECT id, kind, size, codec, pack, offset, length, ${v2 ? 'at, base' : '0 AS at, NULL AS base'} FROM objects WHERE id IN (${marks})`);
    // From a delta base, its own single-base links down to the object stored whole, each with
    // its stored bytes (a chunk's are left to the row cache): the links of a cold chain in one
    // statement instead of two per link.
    this.locateChain = v2
      ? prepared(
          db,
          `WITH RECURSIVE c(id, kind, size, codec, pack, offset, length, at, base, d) AS (
             SELECT id, kind, size, codec, pack, offset, length, at, base, 0 FROM objects WHERE id = ?
             UNION ALL
             SELECT o.id, o.kind, o.size, o.codec, o.pack, o.offset, o.length, o.at, o.base, c.d + 1
               FROM c JOIN objects o ON o.id = c.base
              WHERE c.codec = ${Codec.Delta} AND length(c.base) = 32 AND c.d < ${MAX_READ_DEPTH})
           SELECT c.id, c.kind, c.size, c.codec, c.pack, c.offset, c.length, c.at, c.base,
                  CASE WHEN c.kind = ${ObjectKind.Chunk} THEN NULL ELSE (SELECT substr(data, c.offset + 1, c.length) FROM packs WHERE packs.id = c.pack) END AS bytes
             FROM c ORDER BY c.d`,
        )
      : undefined;
  }

  /**
   * Looks up the locators of objects about to be read (the chunks of a streamed file) in
   * statements of PREFETCH_BATCH ids instead of one each; each is used by the next read of its
   * object, and the read itself still authenticates the bytes.
   */
  prefetch(ids: readonly Buffer[]): void {
    if (this.ahead.size > 4 * PREFETCH_BATCH) this.ahead.clear();
    for (let i = 0; i < ids.length; i += PREFETCH_BATCH) {
      const batch = ids.slice(i, i + PREFETCH_BATCH);
      // Unused places repeat the first id: one statement of a fixed shape.
      while (batch.length < PREFETCH_BATCH) batch.push(batch[0]!);
      let rows: (Located & { id: Buffer })[];
      try {
        rows = this.locateBatch.all(...batch) as (Located & { id: Buffer })[];
      } catch (e) {
        throw mapSqliteError(e, this.path);
      }
      for (const r of rows) this.ahead.set(r.id.toString('latin1'), r);
    }
  }

  /**
   * prefetch() for objects about to be read that may be deltas, and for the objects those deltas
   * are against: a streamed read of a file stored as deltas of an earlier version (every chunk a
   * delta, each against one to four old chunks) located each chunk and each base with a
   * statement of its own. Bases already decoded or located are left out.
   */
  prefetchWithBases(ids: readonly Buffer[]): void {
    if (this.strict || ids.length === 0) return;
    this.prefetch(ids);
    const bases = new Map<string, Buffer>();
    for (const id of ids) {
      const r = this.ahead.get(id.toString('latin1'));
      if (!r || r.codec !== Codec.Delta || !r.base || r.base.length === 0 || r.base.length % 32 !== 0 || r.base.length > 32 * DELTA_MAX_BASES) continue;
      for (const b of deltaBases(r.base)) {
        const key = b.toString('latin1');
        if (!this.bases.has(key) && !this.ahead.has(key)) bases.set(key, b);
      }
    }
    if (bases.size > 0) this.prefetch([...bases.values()]);
  }

  has(id: Uint8Array): boolean {
    return this.locate.get(id) !== undefined;
  }

  /** The object's index row, a dictionary's ref resolved to its id (dictionary-refs.ts). */
  locator(id: Uint8Array): Locator | undefined {
    const loc = this.locate.get(id) as Locator | undefined;
    return loc && resolveRow(this.db, loc);
  }

  /**
   * The stored bytes `loc` names. A chunk's whole row is read and kept (a large file is read
   * in order, many chunks per row); anything else reads just its bytes with substr(), so a small
   * read never copies a whole row.
   */
  private storedBytes(loc: Located, wholeRow: boolean): Buffer | undefined {
    if (loc.offset < 0 || loc.length < 0) return undefined;
    if (loc.bytes) return loc.bytes.length === loc.length ? loc.bytes : undefined;
    if (wholeRow) {
      let row = this.packs.get(loc.pack);
      if (!row) {
        row = this.readPack.get(loc.pack) as Buffer | undefined;
        if (!row) return undefined;
        this.packs.set(loc.pack, row);
        if (this.packs.size > 8) this.packs.delete(this.packs.keys().next().value!);
      }
      return loc.offset + loc.length <= row.length ? row.subarray(loc.offset, loc.offset + loc.length) : undefined;
    }
    const part = this.readPart.get(loc.offset + 1, loc.length, loc.pack) as Buffer | null | undefined;
    // substr() returns fewer bytes past the row's end, and NULL (or nothing) without the row.
    return part && part.length === loc.length ? part : undefined;
  }

  /**
   * Keeps `data`, the canonical bytes of object `id` of `kind`, for the next get() of it. The
   * caller vouches for them: they hashed to `id` when written (a page's id is its hash) or were
   * returned by get(). Not kept over RECENT_BYTES / 8; a strict read never takes them.
   */
  remember(id: Buffer, kind: ObjectKind, data: Buffer): void {
    if (!this.keeps(data.length)) return;
    const key = id.toString('latin1');
    const old = this.recent.get(key);
    if (old) {
      this.recent.delete(key);
      this.recentBytes -= old.data.length;
    }
    this.recent.set(key, { kind, data });
    this.recentBytes += data.length;
    for (const [k, v] of this.recent) {
      if (this.recentBytes <= RECENT_BYTES) break;
      this.recent.delete(k);
      this.recentBytes -= v.data.length;
    }
  }

  /** Whether remember() keeps an object of `size` bytes. */
  keeps(size: number): boolean {
    return size <= RECENT_BYTES / 8;
  }

  /** The bytes remember() kept for `id` (of `kind`, when given), or undefined: nothing is read. */
  recalled(id: Buffer, kind?: ObjectKind): Buffer | undefined {
    if (this.strict || this.recent.size === 0) return undefined;
    const hit = this.recent.get(id.toString('latin1'));
    return hit && (kind === undefined || hit.kind === kind) ? hit.data : undefined;
  }

  /** Drops what remember() kept: the next reads come from the Store file (verify reads what is stored). */
  forgetRemembered(): void {
    this.recent.clear();
    this.recentBytes = 0;
  }

  /** Forget cached packs (after a rollback removed some) and remembered objects. */
  reset(): void {
    this.forgetRemembered();
    this.ahead.clear();
    this.packs.clear();
    this.frames.clear();
    this.bases.clear();
    this.basesBytes = 0;
    forgetDictionaryRefs(this.db);
  }

  /** A delta base's bytes, from the cache of recent bases or read (and authenticated) now. */
  private baseOf(id: Buffer, depth: number, expected?: ObjectKind): Buffer {
    this.basesUsed = true;
    const key = id.toString('latin1');
    const hit = this.bases.get(key);
    if (hit && (hit.checked || !this.strict)) {
      this.bases.delete(key);
      this.bases.set(key, hit);
      return hit.data;
    }
    const data = this.read(id, expected, depth);
    if (hit) this.evict(key, hit.data.length);
    if (data.length <= BASE_CACHE_BYTES / 8) {
      this.bases.set(key, { data, checked: this.strict || expected === ObjectKind.Dictionary });
      this.basesBytes += data.length;
      for (const [k, v] of this.bases) {
        if (this.basesBytes <= BASE_CACHE_BYTES) break;
        this.evict(k, v.data.length);
      }
    }
    return data;
  }

  private evict(key: string, bytes: number): void {
    if (this.bases.delete(key)) this.basesBytes -= bytes;
  }

  /**
   * The object's bytes, decoded and re-hashed against `id`. Delta bases on the way are decoded
   * without a hash of their own: the object's hash authenticates every byte it returns, so an
   * object reads (exactly) or fails the same way whether or not a base was damaged where its
   * delta does not look. A read that fails is read again with every base re-hashed (none from
   * the cache unless it was), so its error names the damaged object of the chain.
   */
  get(id: Uint8Array, expected?: ObjectKind): Buffer {
    if (this.strict) return this.read(id, expected, 0);
    if (this.recent.size > 0) {
      const hit = this.recent.get(Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('latin1'));
      if (hit && (expected === undefined || hit.kind === expected)) return hit.data;
    }
    this.basesUsed = false;
    try {
      return this.read(id, expected, 0);
    } catch (e) {
      if (!(e instanceof LayerFsError) || e.code !== 'ERR_CORRUPT' || !this.basesUsed) throw e;
      this.ahead.clear();
      this.strict = true;
      try {
        return this.read(id, expected, 0);
      } finally {
        this.strict = false;
      }
    }
  }

  /** Takes the locators and stored bytes of `base`'s chain in one statement, for the reads that follow. */
  private fetchChain(base: Buffer): void {
    if (!this.locateChain || this.strict) return;
    let rows: (Located & { id: Buffer })[];
    try {
      rows = this.locateChain.all(base) as (Located & { id: Buffer })[];
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    if (this.ahead.size > 4 * PREFETCH_BATCH) this.ahead.clear();
    for (const r of rows) {
      // A link already decoded ends what the read needs.
      const key = r.id.toString('latin1');
      if (this.bases.has(key)) break;
      this.ahead.set(key, r);
    }
  }

  private locateNow(id: Uint8Array): Locator | undefined {
    try {
      return this.locate.get(id) as Locator | undefined;
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
  }

  /**
   * A read outside a read transaction takes the locator and the row in two statements, and a
   * repack on another connection may move the object in between (it deletes the old row): when
   * a read fails and the locator has changed since, it is read again where it is now. Damage
   * leaves the locator as it is and still fails.
   */
  private read(id: Uint8Array, expected: ObjectKind | undefined, depth: number): Buffer {
    let loc: Located | undefined;
    if (this.ahead.size > 0) {
      const key = Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('latin1');
      loc = this.ahead.get(key);
      if (loc) this.ahead.delete(key);
    }
    loc ??= this.locateNow(id);
    for (let attempt = 0; ; attempt++) {
      try {
        return this.readAt(id, loc, expected, depth);
      } catch (e) {
        if (!(e instanceof LayerFsError) || e.code !== 'ERR_CORRUPT' || !loc || attempt >= 3) throw e;
        const now = this.locateNow(id);
        if (!now || (now.pack === loc.pack && now.offset === loc.offset && now.length === loc.length && now.at === loc.at && now.codec === loc.codec)) throw e;
        loc = now;
      }
    }
  }

  private readAt(id: Uint8Array, loc: Locator | undefined, expected: ObjectKind | undefined, depth: number): Buffer {
    const hex = () => toHex(id);
    if (!loc) throw new LayerFsError('ERR_CORRUPT', `object ${hex()} is missing from the Store`, { id: hex(), path: this.path, hint: 'run layerfs verify' });
    if (expected !== undefined && loc.kind !== expected) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} has kind ${loc.kind}, expected ${expected}`, { id: hex(), path: this.path });
    }
    const damaged = (why: string, cause?: unknown) =>
      new LayerFsError('ERR_CORRUPT', `object ${hex()} has a damaged locator or pack (${why})`, { id: hex(), path: this.path, hint: 'run layerfs verify', cause });
    const data = this.decode(loc, depth, damaged);
    const tag = DOMAIN_TAGS[loc.kind as ObjectKind];
    // A delta base is authenticated by the object read through it (get), unless strict; a
    // dictionary always is.
    if (tag !== undefined && depth > 0 && !this.strict && loc.kind !== ObjectKind.Dictionary) return data;
    if (tag === undefined || !objectId(tag, data).equals(id)) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} does not match its id`, { id: hex(), path: this.path, hint: 'run layerfs verify to list damaged states' });
    }
    return data;
  }

  /** The stored bytes `loc` names, or the error `damaged` makes. */
  private stored(loc: Located, damaged: Damaged): Buffer {
    let bytes: Buffer | undefined;
    try {
      bytes = this.storedBytes(loc, loc.kind === ObjectKind.Chunk);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    if (!bytes) throw damaged('outside its pack');
    return bytes;
  }

  /** The canonical bytes `loc` decodes to, not yet checked against the id. */
  private decode(loc: Locator, depth: number, damaged: Damaged): Buffer {
    if (loc.codec === Codec.Raw) {
      if (loc.length !== loc.size) throw damaged('length');
      return this.stored(loc, damaged);
    }
    if (loc.codec === Codec.Zstd || loc.codec === Codec.Dict) {
      const frame = this.groupFrame(loc, depth, damaged);
      if (loc.at < 0 || loc.at + loc.size > frame.length) throw damaged('outside its frame');
      return frame.subarray(loc.at, loc.at + loc.size);
    }
    if (loc.codec === Codec.Delta) {
      if (!loc.base || loc.base.length === 0 || loc.base.length % 32 !== 0 || loc.base.length > 32 * DELTA_MAX_BASES || depth >= MAX_READ_DEPTH) throw damaged('delta base');
      const ids = deltaBases(loc.base);
      const first = ids[0]!.toString('latin1');
      if (ids.length === 1 && !this.bases.has(first) && !this.ahead.has(first)) this.fetchChain(ids[0]!);
      const parts = ids.map((b) => this.baseOf(b, depth + 1));
      const base = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      const bytes = this.stored(loc, damaged);
      try {
        return zstdDecompress(bytes, loc.size, base);
      } catch (e) {
        throw damaged('delta does not decode', e);
      }
    }
    throw damaged(`unknown codec ${loc.codec}`);
  }

  /**
   * The decoded group frame `loc` is in (Codec.Zstd, or Codec.Dict with the dictionary object
   * its `base` names, read and authenticated like a delta base); recent frames are kept.
   */
  private groupFrame(loc: Locator, depth: number, damaged: Damaged): Buffer {
    const key = `${loc.pack}:${loc.offset}`;
    const hit = this.frames.get(key);
    if (hit) return hit;
    let dict: Dictionary | undefined;
    if (loc.codec === Codec.Dict) {
      const id = resolveBase(this.db, loc.codec, loc.base);
      if (!id || id.length !== 32 || depth >= MAX_READ_DEPTH) throw damaged('dictionary');
      dict = { id, bytes: this.baseOf(id, depth + 1, ObjectKind.Dictionary) };
    }
    const bytes = this.stored(loc, damaged);
    let frame: Buffer;
    try {
      frame = dict ? zstdDictDecompress(bytes, -1, dict) : zstdDecompress(bytes, -1);
    } catch (e) {
      throw damaged('frame does not decode', e);
    }
    this.frames.set(key, frame);
    if (this.frames.size > 32) this.frames.delete(this.frames.keys().next().value!);
    return frame;
  }
}

type Damaged = (why: string, cause?: unknown) => LayerFsError;

/** A locator, with its stored bytes when a chain's statement fetched them (fetchChain). */
type Located = Locator & { bytes?: Buffer | null };
