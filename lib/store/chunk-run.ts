/**
 * Authenticated reads of runs of consecutive chunks of a large file, for streaming readers: the
 * streamed read of a whole file (FsView.content: readFile, cat, export) and the FUSE reader
 * threads' 1 MiB READs. Reading chunk by chunk through the ObjectReader costs a locator query, a
 * decode call, a hash call and a Buffer per chunk; here a run takes one locator query per
 * BATCH ids, and the chunks of a stretch in one pack row are decoded and verified in the addon
 * in one call (lib/native decodeRun: each zstd frame decoded once, with the Store dictionary its
 * row names where it has one, straight into the output where its chunks fill it, raw chunks
 * verified where they lie in the row, every chunk re-hashed against its id many at a time, the
 * work shared with a pool thread). The last two rows read are kept. Chunks stored in another
 * form (deltas: their locators and their bases' taken in batches ahead), missing, moved by a
 * repack meanwhile, or damaged go through the ObjectReader, which reads them (again) or fails
 * with its typed error: no byte is returned before its chunk was verified.
 *
 * Rows are read through the connection's own SQLite by the addon (lib/native blobRead, loaded
 * into the connection as a SQLite extension) into buffers reused from call to call, and a
 * streamed piece of raw chunks is read straight into the Buffer handed out: no row assembled by
 * SQLite, no Buffer made per row and dropped (the garbage a large read made). Without the
 * extension (another SQLite library in the process) rows are read with SELECT, as before.
 */
import { availableParallelism } from 'node:os';
import { ADDON_PATH, BLOB_ENTRY, BLOB_HANDLE_SQL, BlobRead, blobRead } from '../native/blobs.js';
import { RUN_FIELDS, RunCodec, startRun, type RunTask } from '../native/run.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Codec } from './codec.js';
import { ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { Db } from './store-file.js';
import { loadDictionary } from './dictionary-refs.js';
import type { Dictionary } from './dictionary.js';
import { StreamMapper, type StreamMap } from './stream-map.js';

/** A chunk of a run: its id and the length its extent records. */
export interface ChunkRef {
  readonly id: Buffer;
  readonly length: number;
}

/** Ids one locator query takes (one blob of 32 bytes per id, split by SQLite). */
const BATCH = 256;

/** Delta chunks whose locators (and their bases') one locateAhead takes. */
const AHEAD = 32;

/** Canonical bytes one decode call takes at most (a chunk row decodes to about 1–1.5 MiB). */
const MAX_STRETCH = 4 * 1024 * 1024;

/** Threads a decode call shares its work with (the caller's included). */
const THREADS = Math.min(2, Math.max(1, availableParallelism()));

/** A stretch being decoded: its chunks, where its bytes go, and which of them verified. */
export interface Started {
  chunks: readonly ChunkRef[];
  out: Buffer;
  ok: Uint8Array;
  task: RunTask | null;
  /** In place: `out` is a view of a row, copied before a chunk read another way is put in. */
  inPlace: boolean;
  /** The reused row the task reads, released when the stretch is finished. */
  row: RowBuffer | null;
}

/** A pack row held in a reused buffer; `users` stretches still read it. */
interface RowBuffer {
  id: number;
  data: Buffer;
  users: number;
}

/** A views() call started (ChunkRunReader.startViews), to be finished once. */
export interface StartedViews {
  readonly parts: readonly (Started | Buffer)[];
  readonly from: number;
  readonly len: number;
}

/** Row buffers are allocated in multiples of this. */
const ROW_ROUND = 256 * 1024;

const EMPTY = Buffer.alloc(0);

/** Idle row buffers kept for reuse (a READ's stretches may pin a few more at once). */
const IDLE_ROWS = 3;


/** LAYERFS_PACK_ROWS=0: rows are always read with SELECT (a fallback switch, and the A/B of the benchmarks). */
export const PACK_ROWS_ENV = 'LAYERFS_PACK_ROWS';

/** Per connection: the handle blobRead reads its rows with (0: none, rows are read with SELECT). */
const handles = new WeakMap<Db, number>();

function packRowsHandle(db: Db): number {
  const known = handles.get(db);
  if (known !== undefined) return known;
  if (!ADDON_PATH || process.env[PACK_ROWS_ENV] === '0') return 0;
  try {
    // better-sqlite3 takes the entry point as a second argument; its types do not say so.
    (db as unknown as { loadExtension(file: string, entryPoint: string): void }).loadExtension(ADDON_PATH, BLOB_ENTRY);
    const h = Number(db.prepare(BLOB_HANDLE_SQL).pluck().get());
    handles.set(db, h);
    return h;
  } catch {
    // Not now (the connection is busy with an iterator), or never (another SQLite library
    // registered first): rows are read with SELECT, and the next reader tries again.
    return 0;
  }
}

/** [position in the ids located, kind, size, codec, pack, offset, length, at, base] of a located chunk. */
type Row = [number, number, number, number, number, number, number, number, Buffer | null];

/** Located chunks, aligned with the ids asked for (undefined: not in the objects table). */
type Located = (Row | undefined)[];

export class ChunkRunReader {
  /** The locator statement (locate()), prepared on first use. */
  private locates: ReturnType<Db['prepare']> | undefined;
  private readonly readPack;
  /** The `at` column (format 2 on; a format-1 Store opened read-only has only raw objects). */
  private readonly at: string;
  /** Dictionaries of Codec.Dict chunks, by the ref their rows hold (null: it cannot be read; such chunks go through the ObjectReader). */
  private readonly dicts = new Map<string, Dictionary | null>();
  private packs: { id: number; data: Buffer }[] = [];
  /** Reused outputs of read(), per lane one per stretch of a READ: their bytes are copied out before the next call of the lane. */
  private readonly scratch: Buffer[][] = [];
  /** blobRead's handle of the connection (0: rows are read with SELECT). */
  private readonly handle: number;
  /** Reused row buffers, most recently used first. */
  private rows: RowBuffer[] = [];
  /** The Store file's map while large streamed reads run (mapStream). */
  private readonly mapper: StreamMapper;

  constructor(
    private readonly db: Db,
    private readonly objects: ObjectReader,
    private readonly threads = THREADS,
    /** false: rows are read with SELECT even where the addon could read them (tests compare both). */
    packRows = true,
  ) {
    this.readPack = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
    this.at = (db.pragma('user_version', { simple: true }) as number) >= 2 ? 'o.at, o.base' : '0, NULL';
    this.handle = packRows ? packRowsHandle(db) : 0;
    this.mapper = new StreamMapper(db);
  }

  /** Maps the Store file while a streamed read of a `bytes`-byte file runs (StreamMapper.map). */
  mapStream(bytes: number): StreamMap {
    return this.mapper.map(bytes);
  }

  /** Rows read through the addon (not SELECT), and reused row buffers held now. */
  get rowReads(): { native: boolean; buffers: number } {
    return { native: this.handle !== 0, buffers: this.rows.length };
  }

  /** Forgets the rows kept (after a rollback removed some). */
  reset(): void {
    this.packs = [];
    this.dicts.clear();
    // Rows still read by a stretch stay theirs; none is found by its id again.
    for (const r of this.rows) r.id = -1;
  }

  /**
   * A whole pack row, from the last two read: SQLite assembles a row's whole overflow chain even
   * for a substr(), and a READ that is not aligned with packs ends in the pack the next one
   * starts in.
   */
  pack(id: number): Buffer | undefined {
    const hit = this.packs.find((p) => p.id === id);
    if (hit) return hit.data;
    const data = this.readPack.get(id) as Buffer | undefined;
    if (!data) return undefined;
    this.packs.unshift({ id, data });
    this.packs.length = Math.min(this.packs.length, 2);
    return data;
  }

  /**
   * The locators of `ids`, in their order: one statement per BATCH ids, the ids handed over as
   * one blob and split by SQLite, each row tagged with its position. No Buffer per id and no
   * map keyed by id: a 100 MiB file is ~5,000 chunks, and per-row objects and keys were a
   * large part of a cold process's read (docs/BENCHMARKS.md, 2026-12-03).
   */
  private locate(ids: readonly Buffer[]): Located {
    const out: Located = new Array<Row | undefined>(ids.length).fill(undefined);
    this.locates ??= this.db
      .prepare(
        'WITH RECURSIVE ids(i, id) AS (SELECT 0, substr(:ids, 1, 32) UNION ALL SELECT i + 1, substr(:ids, i * 32 + 33, 32) FROM ids WHERE i * 32 + 64 <= length(:ids)) ' +
          `SELECT ids.i, o.kind, o.size, o.codec, o.pack, o.offset, o.length, ${this.at} FROM ids JOIN objects o ON o.id = ids.id`,
      )
      .raw();
    for (let i = 0; i < ids.length; i += BATCH) {
      const part = ids.slice(i, i + BATCH);
      for (const row of this.locates.all({ ids: Buffer.concat(part) }) as Row[]) out[i + row[0]] = row;
    }
    return out;
  }

  /**
   * Copies `len` bytes of the concatenation of `run` (each chunk `length` bytes), starting
   * `from` bytes into its first chunk, to `dst` at `dstOff`. The run must cover the range.
   */
  read(run: readonly ChunkRef[], from: number, len: number, dst: Buffer, dstOff: number): void {
    let o = dstOff;
    for (const v of this.views(run, from, len)) o += v.copy(dst, o);
  }

  /**
   * The same bytes as read(), as views of the verified bytes where they lie (reused row and
   * scratch buffers), in order: valid until the next read() or views(), so a reply can be
   * written from them without one more copy.
   */
  views(run: readonly ChunkRef[], from: number, len: number): Buffer[] {
    return this.finishViews(this.startViews(run, from, len, 0));
  }

  /**
   * Starts views(): the rows are read and their decoding started; finishViews() waits for it and
   * returns the views. Two calls may be started at once on different lanes (0 or 1, the reused
   * buffers each decodes into): the rows of a started call stay held until it is finished, and
   * its views stay valid until the next call of its lane, or the next call started after it was
   * finished.
   */
  startViews(run: readonly ChunkRef[], from: number, len: number, lane: 0 | 1): StartedViews {
    const rows = this.locate(run.map((c) => c.id));
    // Every stretch is started before the first is finished: the addon decodes one row while the
    // next is read out of SQLite, and a READ's rows are decoded in parallel.
    const parts: (Started | Buffer)[] = [];
    try {
      for (let i = 0, at = -from, located = 0; i < run.length && at < len; ) {
        const count = this.stretch(run, rows, i);
        if (count === 0 && i >= located) located = this.locateAhead(run, rows, i);
        parts.push(count > 0 ? this.start(run.slice(i, i + count), rows.slice(i, i + count), { lane, i: parts.length }) : this.viaReader(run[i]!));
        for (const c of run.slice(i, i + Math.max(1, count))) at += c.length;
        i += Math.max(1, count);
      }
    } catch (e) {
      this.releaseFrom(parts, 0);
      throw e;
    }
    return { parts, from, len };
  }

  /** The views of a started views() call (see startViews). */
  finishViews(p: StartedViews): Buffer[] {
    const { parts } = p;
    const out: Buffer[] = [];
    let k = 0;
    try {
      let skip = p.from;
      let left = p.len;
      for (; k < parts.length; k++) {
        const data = this.done(parts[k]!);
        const n = Math.min(data.length - skip, left);
        if (n > 0) out.push(data.subarray(skip, skip + n));
        left -= Math.max(0, n);
        skip = Math.max(0, skip - data.length);
      }
      if (left > 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'the chunk run does not cover the range read');
    } finally {
      // A stretch that failed: the ones started after it let go of their rows.
      this.releaseFrom(parts, k + 1);
    }
    return out;
  }

  private releaseFrom(parts: readonly (Started | Buffer)[], from: number): void {
    for (let j = from; j < parts.length; j++) {
      const p = parts[j]!;
      if (!Buffer.isBuffer(p)) this.release(p);
    }
  }

  /**
   * The verified bytes of `run`, in order, in pieces of one or more whole chunks; each piece is
   * the caller's to keep (never reused). The next stretch's row is read (on this thread) while
   * the addon decodes and verifies the current one. With `alloc`, the buffers the stretches are
   * read and decoded into come from it (an output that reuses the buffers it has written).
   */
  *pieces(run: readonly ChunkRef[], alloc?: (bytes: number) => Buffer): Generator<Buffer> {
    let pending: Started | Buffer | null = null;
    try {
      for (let b = 0; b < run.length; b += BATCH) {
        const part = run.slice(b, b + BATCH);
        const rows = this.locate(part.map((c) => c.id));
        let located = 0;
        for (let i = 0; i < part.length; ) {
          const count = this.stretch(part, rows, i);
          if (count === 0 && i >= located) located = this.locateAhead(part, rows, i);
          const next = count > 0 ? this.start(part.slice(i, i + count), rows.slice(i, i + count), null, alloc) : this.viaReader(part[i]!);
          const p = pending;
          pending = next;
          if (p) yield this.done(p);
          i += Math.max(1, count);
        }
      }
      const p = pending;
      pending = null;
      if (p) yield this.done(p);
    } finally {
      // A reader that stops early: the stretch still being decoded lets go of its row.
      if (pending && !Buffer.isBuffer(pending)) this.release(pending);
    }
  }

  /**
   * Delta chunks (which the ObjectReader reads) from run[i] on, up to AHEAD of them within the
   * next 4 × AHEAD chunks: their locators and those of their bases taken in a few statements
   * (ObjectReader.prefetchWithBases), not one each when read. Returns the index up to which it
   * looked.
   */
  private locateAhead(run: readonly ChunkRef[], rows: Located, i: number): number {
    const ids: Buffer[] = [];
    let k = i;
    for (; k < run.length && k < i + 4 * AHEAD && ids.length < AHEAD; k++) {
      if (rows[k]?.[3] === Codec.Delta) ids.push(run[k]!.id);
    }
    if (ids.length > 1) this.objects.prefetchWithBases(ids);
    return k;
  }

  /** How many chunks from run[i] on one decode call takes (0 when run[i] is not a located raw chunk, zstd frame or dictionary frame whose dictionary reads). */
  private stretch(run: readonly ChunkRef[], rows: Located, i: number): number {
    const usable = (k: number): Row | undefined => {
      const c = run[k]!;
      const r = rows[k];
      if (!r || r[1] !== ObjectKind.Chunk || r[2] !== c.length || r[5] < 0 || r[6] < 0 || r[7] < 0) return undefined;
      if (r[3] === Codec.Dict) return r[8] && this.dictOf(r[8]) ? r : undefined;
      return (r[3] === Codec.Raw && r[6] === c.length) || r[3] === Codec.Zstd ? r : undefined;
    };
    const head = usable(i);
    if (!head) return 0;
    let bytes = head[2];
    // One dictionary per decode call: a chunk of another one starts the next stretch.
    let dict = head[3] === Codec.Dict ? head[8] : null;
    let k = i + 1;
    for (; k < run.length; k++) {
      const r = usable(k);
      if (!r || r[4] !== head[4] || bytes + r[2] > MAX_STRETCH) break;
      if (r[3] === Codec.Dict) {
        if (dict && !dict.equals(r[8]!)) break;
        dict = r[8];
      }
      bytes += r[2];
    }
    return k - i;
  }

  /** The dictionary a Codec.Dict chunk's row names by `ref`; undefined when it cannot be read (its chunks then go through the ObjectReader, which reports why). */
  private dictOf(ref: Buffer): Dictionary | undefined {
    return loadDictionary(this.db, ref, (id) => this.objects.get(id, ObjectKind.Dictionary), this.dicts) ?? undefined;
  }

  /**
   * Starts decoding `chunks` (all in one pack row, located in `rows`, aligned with them). Raw chunks that lie in
   * order in the row are verified in place: for pieces() (`scratch` null) read straight into the
   * Buffer that is handed out, for read() in the row's reused buffer. Anything else is decoded
   * into a new buffer (pieces()), or into reused scratch buffer `scratch` (read(): its
   * bytes must be copied out before the next read()).
   */
  private start(chunks: readonly ChunkRef[], rows: Located, scratch: { lane: number; i: number } | null, alloc: (bytes: number) => Buffer = Buffer.allocUnsafe): Started {
    const count = chunks.length;
    const spec = new Float64Array(count * RUN_FIELDS);
    const ids = Buffer.allocUnsafe(count * 32);
    let total = 0;
    let inPlace = true;
    let pack = -1;
    let dict: Dictionary | undefined;
    for (let k = 0; k < count; k++) {
      const c = chunks[k]!;
      const r = rows[k]!;
      const f = k * RUN_FIELDS;
      spec[f] = r[5];
      spec[f + 1] = r[6];
      spec[f + 2] = r[3] === Codec.Raw ? RunCodec.Raw : r[3] === Codec.Dict ? RunCodec.Dict : RunCodec.Zstd;
      if (r[3] === Codec.Dict) dict ??= this.dictOf(r[8]!);
      spec[f + 3] = r[3] === Codec.Raw ? 0 : r[7];
      spec[f + 4] = c.length;
      c.id.copy(ids, k * 32);
      inPlace &&= r[3] === Codec.Raw && (k === 0 || r[5] === spec[f - RUN_FIELDS]! + spec[f - RUN_FIELDS + 1]!);
      total += c.length;
      pack = r[4];
    }
    const ok = new Uint8Array(count);
    if (inPlace && scratch === null && this.handle) return this.startSpan(chunks, spec, ids, ok, pack, total, alloc);
    const row = this.handle ? this.pinRow(pack) : undefined;
    const data = row ? row.data : this.handle ? undefined : this.pack(pack);
    if (!data) return { chunks, out: Buffer.allocUnsafe(total), ok, task: null, inPlace: false, row: null };
    if (inPlace && spec[0]! + total <= data.length) {
      return { chunks, out: data.subarray(spec[0]!, spec[0]! + total), ok, task: startRun(data, spec, ids, null, ok, this.threads), inPlace: true, row: row ?? null };
    }
    const out = scratch === null ? alloc(total) : this.scratchOf(scratch.lane, scratch.i, total);
    return { chunks, out, ok, task: startRun(data, spec, ids, out, ok, this.threads, dict), inPlace: false, row: row ?? null };
  }

  /** Raw chunks lying in order in pack row `pack` from spec[0] on, read straight into a new Buffer and verified there. */
  private startSpan(chunks: readonly ChunkRef[], spec: Float64Array, ids: Buffer, ok: Uint8Array, pack: number, total: number, alloc: (bytes: number) => Buffer): Started {
    const out = alloc(total);
    const from = spec[0]!;
    if (this.readRow(pack, from, total, out) < 0) return { chunks, out, ok, task: null, inPlace: false, row: null };
    for (let f = 0; f < spec.length; f += RUN_FIELDS) spec[f] = spec[f]! - from;
    return { chunks, out, ok, task: startRun(out, spec, ids, null, ok, this.threads), inPlace: true, row: null };
  }

  /** blobRead of a pack row, with any SQLite error taken as "not read" (the ObjectReader then reads the chunks, or fails with a typed error). */
  private readRow(pack: number, offset: number, length: number, out: Buffer): number {
    try {
      return blobRead(this.handle, 'packs', 'data', pack, offset, length, out, 0);
    } catch {
      return BlobRead.NoRow;
    }
  }

  /** Pack row `id` in a reused buffer, held for one more stretch until release(); undefined when it cannot be read. */
  private pinRow(id: number): RowBuffer | undefined {
    let at = this.rows.findIndex((r) => r.id === id);
    if (at < 0) {
      const size = this.readRow(id, 0, 0, EMPTY);
      if (size < 0) return undefined;
      at = this.rows.findLastIndex((r) => r.users === 0);
      if (at < 0) at = this.rows.push({ id: -1, data: EMPTY, users: 0 }) - 1;
      const r = this.rows[at]!;
      r.id = -1;
      if (r.data.buffer.byteLength < size || r.data.byteOffset !== 0) r.data = Buffer.allocUnsafeSlow(Math.ceil(Math.max(size, 1) / ROW_ROUND) * ROW_ROUND);
      r.data = Buffer.from(r.data.buffer, 0, r.data.buffer.byteLength);
      // The row may have changed between the two reads (another connection's repack): then it is not used.
      if (this.readRow(id, 0, size, r.data) !== size) return undefined;
      r.data = r.data.subarray(0, size);
      r.id = id;
    }
    const r = this.rows[at]!;
    this.rows.splice(at, 1);
    this.rows.unshift(r);
    r.users++;
    let idle = 0;
    this.rows = this.rows.filter((x) => x.users > 0 || ++idle <= IDLE_ROWS);
    return r;
  }

  private done(p: Started | Buffer): Buffer {
    return Buffer.isBuffer(p) ? p : this.finish(p);
  }

  /** Waits for a started stretch and lets go of its row, its bytes unused. */
  private release(s: Started): void {
    s.task?.wait();
    if (s.row) s.row.users--;
    s.row = null;
  }

  /** The verified bytes of a started stretch: a chunk the addon could not verify is read through the ObjectReader, which reads it again or throws. */
  private finish(s: Started): Buffer {
    this.release(s);
    let out = s.out;
    if (s.inPlace && s.ok.includes(0)) out = Buffer.from(out);
    for (let k = 0, at = 0; k < s.chunks.length; at += s.chunks[k]!.length, k++) {
      if (!s.ok[k]) this.viaReader(s.chunks[k]!).copy(out, at);
    }
    return out;
  }

  private scratchOf(lane: number, i: number, bytes: number): Buffer {
    const mine = (this.scratch[lane] ??= []);
    const have = mine[i];
    if (have && have.length >= bytes) return have.subarray(0, bytes);
    const b = Buffer.allocUnsafeSlow(Math.max(bytes, 2 * (have?.length ?? 0)));
    mine[i] = b;
    return b.subarray(0, bytes);
  }

  private viaReader(c: ChunkRef): Buffer {
    const data = this.objects.get(c.id, ObjectKind.Chunk);
    if (data.length !== c.length) throw new LayerFsError('ERR_CORRUPT', `chunk ${toHex(c.id)} has ${data.length} bytes, its extent says ${c.length}`, { id: toHex(c.id), hint: 'run layerfs verify' });
    return data;
  }
}
