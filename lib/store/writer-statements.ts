/**
 * What every ObjectWriter of a connection shares: its statements, prepared once per connection
 * (a small commit's writer lives for a few milliseconds, and four prepares were a tenth of it),
 * how much of a transaction is compressed on the writer's own thread, and the dictionary row.
 */
import { zstdCompress, zstdCompressResult, zstdCompressStart, zstdCompressWith } from '../native/zstd.js';
import { Codec, COMPRESSION_LEVEL, DICT_LEVEL, KEEP_COMPRESSED, looksRandom } from './codec.js';
import { slice, type Pending, type RowBuffer, type RowPart } from './object-groups.js';
import type { WriteStats } from './object-id.js';
import { CHUNK_FRAME_TARGET } from './schema.js';
import type { Dictionary } from './dictionary.js';
import { dictionaryRef } from './dictionary-refs.js';
import { ObjectKind } from './object-id.js';
import { mapSqliteError } from './sqlite-errors.js';
import { prepared, type Db, type PreparedStatement } from './store-file.js';

/**
 * Groups sealed while a transaction has sealed at most this many bytes are compressed on the
 * writer's thread: a commit of a small change seals a few tree groups, and handing each to the
 * addon's thread only to wait for it cost more than the compression (on a busy machine each
 * hand-over is a scheduling delay).
 */
export const INLINE_SEAL_BYTES = 256 * 1024;

export interface WriterStatements {
  exists: PreparedStatement;
  locate: PreparedStatement;
  insertPack: PreparedStatement;
  insertObject: PreparedStatement;
}

/** The writer statements of connection `db` (prepared at its first writer, then kept: `prepared`). */
export function writerStatements(db: Db): WriterStatements {
  return {
    exists: prepared(db, 'SELECT 1 FROM objects WHERE id = ?', 'pluck'),
    locate: prepared(db, 'SELECT size, codec, base FROM objects WHERE id = ?'),
    insertPack: prepared(db, 'INSERT INTO packs (data) VALUES (?)'),
    insertObject: prepared(db, 'INSERT INTO objects (id, kind, size, codec, pack, offset, length, at, base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
  };
}

/**
 * The dictionary object in a row of its own, compressed without a dictionary (it cannot need
 * itself). Not the caller's content: its receipt does not count it.
 */
export function writeDictionaryRow(st: Pick<WriterStatements, 'insertPack' | 'insertObject'>, dict: Dictionary, path: string): void {
  const z = zstdCompress(dict.bytes, COMPRESSION_LEVEL);
  const zipped = z.length <= dict.bytes.length * KEEP_COMPRESSED;
  try {
    const pack = Number(st.insertPack.run(zipped ? z : dict.bytes).lastInsertRowid);
    st.insertObject.run(dict.id, ObjectKind.Dictionary, dict.bytes.length, zipped ? Codec.Zstd : Codec.Raw, pack, 0, zipped ? z.length : dict.bytes.length, 0, null);
  } catch (e) {
    throw mapSqliteError(e, path);
  }
}

/** What writeChunkRow writes with: an ObjectWriter's statements, row buffer, dictionary and counts. */
/** What writing a row takes: the connection, its statements, the buffer rows are joined in. */
export interface RowContext {
  db: Db;
  statements: Pick<WriterStatements, 'insertPack' | 'insertObject'>;
  rows: RowBuffer;
  path: string;
}

/**
 * Writes the parts of one mixed or tree row (sealed groups, each as its frame or plain, and
 * delta frames) as one pack row with their objects' index rows; returns the objects written.
 */
export function writeGroupRow(ctx: RowContext, parts: RowPart[]): Pending[] {
  const bufs: Buffer[] = [];
  const entries: [Pending, Codec, number, number, number, Buffer | null][] = [];
  let off = 0;
  for (const part of parts) {
    if ('delta' in part) {
      const d = part.delta.delta!;
      entries.push([part.delta, Codec.Delta, off, d.frame.length, 0, d.base]);
      bufs.push(d.frame);
      off += d.frame.length;
      continue;
    }
    let frame: Buffer | null = null;
    const z = part.frame ?? (part.job !== undefined ? (zstdCompressResult(part.job) ?? compressWhole(part.data, part.dict)) : undefined);
    if (z && z.length <= part.data.length * KEEP_COMPRESSED) frame = z;
    const codec = part.dict ? Codec.Dict : Codec.Zstd;
    // The ref is taken here, inside the transaction: it may add the dictionary's ref row.
    const ref = frame && part.dict ? dictionaryRef(ctx.db, part.dict.id) : null;
    part.live.forEach((p, i) => entries.push(frame ? [p, codec, off, frame.length, part.at[i]!, ref] : [p, Codec.Raw, off + part.at[i]!, p.length, 0, null]));
    const bytes = frame ?? part.data;
    bufs.push(bytes);
    off += bytes.length;
  }
  const row = ctx.rows.join(bufs, off);
  try {
    // SQLite copies the bound bytes.
    const pack = Number(ctx.statements.insertPack.run(row).lastInsertRowid);
    // Indexed, not destructured: a destructured tuple costs an iterator and a result per field
    // until the function is optimized, and an import runs this for every object.
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      ctx.statements.insertObject.run(e[0].id, e[0].kind, e[0].length, e[1], pack, e[2], e[3], e[4], e[5]);
    }
  } catch (e) {
    throw mapSqliteError(e, ctx.path);
  }
  return entries.map((e) => e[0]);
}

export interface ChunkRowContext {
  db: Db;
  statements: Pick<WriterStatements, 'insertPack' | 'insertObject'>;
  rows: RowBuffer;
  /** Where a row's new chunks are joined when other chunks lie between them in the file. */
  plain: RowBuffer;
  compress: boolean;
  /**
   * Large files of text (bundles, source maps) share the small files' vocabulary: with the
   * dictionary (and level 3) the real-tree slice's chunk frames stored 8 % less than at level 2 without.
   */
  dict: Dictionary | undefined;
  path: string;
  stats: WriteStats;
}

/** One frame of a chunk row: chunks [i, j), `bytes` of them, and the compression job of all but the first. */
interface ChunkFrame {
  i: number;
  j: number;
  bytes: number;
  plain: Buffer;
  job: number | undefined;
}

/**
 * The frames of a chunk row. All but the first are handed to the addon's compression threads at
 * once, while this thread compresses the first: a row's frames are compressed side by side, and
 * a frame no thread has started by the time it is needed is compressed here (zstdCompressResult).
 * The same bytes as compressing each here (the same parameters).
 */
function chunkFrames(ctx: ChunkRowContext, data: Buffer, chunks: Pending[], from: number, to: number): ChunkFrame[] {
  const frameTarget = ctx.compress ? CHUNK_FRAME_TARGET : Infinity;
  const frames: ChunkFrame[] = [];
  // The row's chunks back to back, joined once into a buffer reused row after row when they are
  // not already (compression jobs copy their input, and the row is written before the next one):
  // a new Buffer per frame was 40 MB of a large commit's garbage.
  let total = 0;
  for (let k = from; k < to; k++) total += chunks[k]!.length;
  const all = slice(data, chunks, from, to, total, ctx.plain);
  let pos = 0;
  for (let i = from; i < to; ) {
    let j = i;
    let bytes = 0;
    while (j < to && bytes < frameTarget) bytes += chunks[j++]!.length;
    const plain = all.subarray(pos, pos + bytes);
    pos += bytes;
    const zip = ctx.compress && frames.length > 0 && !looksRandom(plain);
    frames.push({ i, j, bytes, plain, job: zip ? zstdCompressStart(plain, ctx.dict ? DICT_LEVEL : COMPRESSION_LEVEL, ctx.dict) : undefined });
    i = j;
  }
  return frames;
}

/**
 * `data` compressed here as an addon thread would have (the writer's level, with the Store's
 * dictionary when given): a row's first frame, and a frame whose job's result the addon no
 * longer held (zstdCompressResult).
 */
function compressWhole(data: Buffer, dict: Dictionary | undefined): Buffer {
  return zstdCompressWith(data, dict ? DICT_LEVEL : COMPRESSION_LEVEL, dict);
}

/** One chunk row: frames of about CHUNK_FRAME_TARGET bytes of `chunks[from, to)`, each compressed if that pays. */
export function writeChunkRow(ctx: ChunkRowContext, data: Buffer, chunks: Pending[], from: number, to: number): void {
  const { statements, dict } = ctx;
  const parts: Buffer[] = [];
  const entries: [Pending, Codec, number, number, number][] = [];
  let rowBytes = 0;
  let plainBytes = 0;
  const zipped = dict ? Codec.Dict : Codec.Zstd;
  const frames = chunkFrames(ctx, data, chunks, from, to);
  for (let n = 0; n < frames.length; n++) {
    const { i, j, bytes, plain, job } = frames[n]!;
    let frame: Buffer | null = null;
    let z: Buffer | undefined;
    if (job !== undefined) z = zstdCompressResult(job) ?? compressWhole(plain, dict);
    else if (n === 0 && ctx.compress && !looksRandom(plain)) z = compressWhole(plain, dict);
    if (z && z.length <= plain.length * KEEP_COMPRESSED) frame = z;
    let at = 0;
    for (let k = i; k < j; k++) {
      const c = chunks[k]!;
      entries.push(frame ? [c, zipped, rowBytes, frame.length, at] : [c, Codec.Raw, rowBytes + at, c.length, 0]);
      at += c.length;
    }
    const part = frame ?? plain;
    parts.push(part);
    rowBytes += part.length;
    plainBytes += bytes;
  }
  const row = ctx.rows.join(parts, rowBytes);
  try {
    // Format 12: the rows name the dictionary by its ref (dictionary-refs.ts).
    const dictBase = dict && entries.some((e) => e[1] === Codec.Dict) ? dictionaryRef(ctx.db, dict.id) : null;
    const pack = Number(statements.insertPack.run(row).lastInsertRowid);
    for (let k = 0; k < entries.length; k++) {
      const e = entries[k]!;
      statements.insertObject.run(e[0].id, e[0].kind, e[0].length, e[1], pack, e[2], e[3], e[4], e[1] === Codec.Dict ? dictBase : null);
    }
  } catch (e) {
    throw mapSqliteError(e, ctx.path);
  }
  ctx.stats.objectsInserted += to - from;
  ctx.stats.bytesInserted += plainBytes;
}
