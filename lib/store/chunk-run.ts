/**
 * Authenticated reads of runs of consecutive chunks of a large file, for streaming readers: the
 * streamed read of a whole file (FsView.content: readFile, cat, export) and the FUSE reader
 * threads' 1 MiB READs. Reading chunk by chunk through the ObjectReader costs a locator query, a
 * decode call, a hash call and a Buffer per chunk; here a run takes one locator query per
 * BATCH ids, and the chunks of a stretch in one pack row are decoded and verified in the addon
 * in one call (lib/native decodeRun: each zstd frame decoded once, straight into the output
 * where its chunks fill it, raw chunks verified where they lie in the row, every chunk re-hashed
 * against its id many at a time, the work shared with a pool thread). The last two rows read
 * are kept. Chunks stored in another form (deltas, dictionary frames), missing, moved by a
 * repack meanwhile, or damaged go through the ObjectReader, which reads them (again) or fails
 * with its typed error: no byte is returned before its chunk was verified.
 */
import { availableParallelism } from 'node:os';
import { RUN_FIELDS, RunCodec, startRun, type RunTask } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Codec } from './codec.js';
import { ObjectKind } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { Db } from './store-file.js';

/** A chunk of a run: its id and the length its extent records. */
export interface ChunkRef {
  readonly id: Buffer;
  readonly length: number;
}

/** Ids one locator query takes (well under SQLite's limit on bound parameters). */
const BATCH = 256;

/** Canonical bytes one decode call takes at most (a chunk row decodes to about 1–1.5 MiB). */
const MAX_STRETCH = 4 * 1024 * 1024;

/** Threads a decode call shares its work with (the caller's included). */
const THREADS = Math.min(2, Math.max(1, availableParallelism()));

/** A stretch being decoded: its chunks, where its bytes go, and which of them verified. */
interface Started {
  chunks: readonly ChunkRef[];
  out: Buffer;
  ok: Uint8Array;
  task: RunTask | null;
  /** In place: `out` is a view of the row, copied before a chunk read another way is put in. */
  inPlace: boolean;
}

/** [id, kind, size, codec, pack, offset, length, at] of a located chunk. */
type Row = [Buffer, number, number, number, number, number, number, number];

export class ChunkRunReader {
  private readonly locates = new Map<number, ReturnType<Db['prepare']>>();
  private readonly readPack;
  /** The `at` column (format 2 on; a format-1 Store opened read-only has only raw objects). */
  private readonly at: string;
  private packs: { id: number; data: Buffer }[] = [];
  /** Reused outputs of read(), one per stretch of a READ: their bytes are copied out before the next call. */
  private readonly scratch: Buffer[] = [];

  constructor(
    private readonly db: Db,
    private readonly objects: ObjectReader,
    private readonly threads = THREADS,
  ) {
    this.readPack = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
    this.at = (db.pragma('user_version', { simple: true }) as number) >= 2 ? 'at' : '0 AS at';
  }

  /** Forgets the rows kept (after a rollback removed some). */
  reset(): void {
    this.packs = [];
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

  private locate(ids: readonly Buffer[]): Map<string, Row> {
    const out = new Map<string, Row>();
    for (let i = 0; i < ids.length; i += BATCH) {
      const part = ids.slice(i, i + BATCH);
      let q = this.locates.get(part.length);
      if (!q) {
        q = this.db.prepare(`SELECT id, kind, size, codec, pack, offset, length, ${this.at} FROM objects WHERE id IN (${'?,'.repeat(part.length - 1)}?)`).raw();
        this.locates.set(part.length, q);
      }
      for (const row of q.all(part) as Row[]) out.set(row[0].toString('latin1'), row);
    }
    return out;
  }

  /**
   * Copies `len` bytes of the concatenation of `run` (each chunk `length` bytes), starting
   * `from` bytes into its first chunk, to `dst` at `dstOff`. The run must cover the range.
   */
  read(run: readonly ChunkRef[], from: number, len: number, dst: Buffer, dstOff: number): void {
    const rows = this.locate(run.map((c) => c.id));
    // Every stretch is started before the first is finished: the addon decodes one row while the
    // next is read out of SQLite, and a READ's rows are decoded in parallel.
    const parts: (Started | Buffer)[] = [];
    for (let i = 0, at = -from; i < run.length && at < len; ) {
      const count = this.stretch(run, rows, i);
      parts.push(count > 0 ? this.start(run.slice(i, i + count), rows, parts.length) : this.viaReader(run[i]!));
      for (const c of run.slice(i, i + Math.max(1, count))) at += c.length;
      i += Math.max(1, count);
    }
    let skip = from;
    let left = len;
    let o = dstOff;
    for (const part of parts) {
      const data = this.done(part);
      const n = Math.min(data.length - skip, left);
      if (n > 0) data.copy(dst, o, skip, skip + n);
      o += Math.max(0, n);
      left -= Math.max(0, n);
      skip = Math.max(0, skip - data.length);
    }
    if (left > 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'the chunk run does not cover the range read');
  }

  /**
   * The verified bytes of `run`, in order, in pieces of one or more whole chunks; each piece is
   * the caller's to keep (never reused). The next stretch's row is read (on this thread) while
   * the addon decodes and verifies the current one.
   */
  *pieces(run: readonly ChunkRef[]): Generator<Buffer> {
    let pending: Started | Buffer | null = null;
    for (let b = 0; b < run.length; b += BATCH) {
      const part = run.slice(b, b + BATCH);
      const rows = this.locate(part.map((c) => c.id));
      for (let i = 0; i < part.length; ) {
        const count = this.stretch(part, rows, i);
        const next = count > 0 ? this.start(part.slice(i, i + count), rows, null) : this.viaReader(part[i]!);
        if (pending) yield this.done(pending);
        pending = next;
        i += Math.max(1, count);
      }
    }
    if (pending) yield this.done(pending);
  }

  /** How many chunks from run[i] on one decode call takes (0 when run[i] is not a located raw or zstd chunk). */
  private stretch(run: readonly ChunkRef[], rows: Map<string, Row>, i: number): number {
    const usable = (c: ChunkRef): Row | undefined => {
      const r = rows.get(c.id.toString('latin1'));
      if (!r || r[1] !== ObjectKind.Chunk || r[2] !== c.length || r[5] < 0 || r[6] < 0 || r[7] < 0) return undefined;
      return (r[3] === Codec.Raw && r[6] === c.length) || r[3] === Codec.Zstd ? r : undefined;
    };
    const head = usable(run[i]!);
    if (!head) return 0;
    let bytes = head[2];
    let k = i + 1;
    for (; k < run.length; k++) {
      const r = usable(run[k]!);
      if (!r || r[4] !== head[4] || bytes + r[2] > MAX_STRETCH) break;
      bytes += r[2];
    }
    return k - i;
  }

  /**
   * Starts decoding `chunks` (all in one pack row, located in `rows`). Raw chunks that lie in
   * order in the row are verified in place and will be returned as a view of the row; anything
   * else is decoded into a new buffer, or into reused scratch buffer number `scratch` (its bytes
   * must be copied out before the next read()).
   */
  private start(chunks: readonly ChunkRef[], rows: Map<string, Row>, scratch: number | null): Started {
    const count = chunks.length;
    const spec = new Float64Array(count * RUN_FIELDS);
    const ids = Buffer.allocUnsafe(count * 32);
    let total = 0;
    let inPlace = true;
    let pack = -1;
    for (let k = 0; k < count; k++) {
      const c = chunks[k]!;
      const r = rows.get(c.id.toString('latin1'))!;
      const f = k * RUN_FIELDS;
      spec[f] = r[5];
      spec[f + 1] = r[6];
      spec[f + 2] = r[3] === Codec.Raw ? RunCodec.Raw : RunCodec.Zstd;
      spec[f + 3] = r[3] === Codec.Raw ? 0 : r[7];
      spec[f + 4] = c.length;
      c.id.copy(ids, k * 32);
      inPlace &&= r[3] === Codec.Raw && (k === 0 || r[5] === spec[f - RUN_FIELDS]! + spec[f - RUN_FIELDS + 1]!);
      total += c.length;
      pack = r[4];
    }
    const row = this.pack(pack);
    const ok = new Uint8Array(count);
    if (!row) return { chunks, out: Buffer.allocUnsafe(total), ok, task: null, inPlace: false };
    if (inPlace && spec[0]! + total <= row.length) {
      return { chunks, out: row.subarray(spec[0]!, spec[0]! + total), ok, task: startRun(row, spec, ids, null, ok, this.threads), inPlace: true };
    }
    const out = scratch === null ? Buffer.allocUnsafe(total) : this.scratchOf(scratch, total);
    return { chunks, out, ok, task: startRun(row, spec, ids, out, ok, this.threads), inPlace: false };
  }

  private done(p: Started | Buffer): Buffer {
    return Buffer.isBuffer(p) ? p : this.finish(p);
  }

  /** The verified bytes of a started stretch: a chunk the addon could not verify is read through the ObjectReader, which reads it again or throws. */
  private finish(s: Started): Buffer {
    s.task?.wait();
    let out = s.out;
    if (s.inPlace && s.ok.includes(0)) out = Buffer.from(out);
    for (let k = 0, at = 0; k < s.chunks.length; at += s.chunks[k]!.length, k++) {
      if (!s.ok[k]) this.viaReader(s.chunks[k]!).copy(out, at);
    }
    return out;
  }

  private scratchOf(i: number, bytes: number): Buffer {
    const have = this.scratch[i];
    if (have && have.length >= bytes) return have.subarray(0, bytes);
    const b = Buffer.allocUnsafeSlow(Math.max(bytes, 2 * (have?.length ?? 0)));
    this.scratch[i] = b;
    return b.subarray(0, bytes);
  }

  private viaReader(c: ChunkRef): Buffer {
    const data = this.objects.get(c.id, ObjectKind.Chunk);
    if (data.length !== c.length) throw new LayerFsError('ERR_CORRUPT', `chunk ${toHex(c.id)} has ${data.length} bytes, its extent says ${c.length}`, { id: toHex(c.id), hint: 'run layerfs verify' });
    return data;
  }
}
