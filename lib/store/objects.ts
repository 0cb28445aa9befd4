/**
 * Content-addressed object storage. An ObjectId is BLAKE3(domain tag ‖ 0x00 ‖ canonical bytes);
 * the kind column names the domain, so every read re-hashes and authenticates what it returns.
 * Payloads are packed into rows of about PACK_TARGET bytes; the physical form never changes an id.
 */
import { objectId } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { CHUNK_PACK_TARGET, PACK_TARGET } from './schema.js';
import type { Db } from './store.js';
import { mapSqliteError } from './sqlite-errors.js';

export enum ObjectKind {
  /** Whole content of a regular file below the chunking threshold. */
  Blob = 1,
  /** One FastCDC chunk of a large file. */
  Chunk = 2,
  /** A node of a large file's extent tree. */
  Extents = 3,
  /** A page of a namespace tree (inode table or directory). */
  Page = 4,
  /** A filesystem root. */
  Root = 5,
}

export const DOMAIN_TAGS: Record<ObjectKind, string> = {
  [ObjectKind.Blob]: 'layerfs/blob/v1',
  [ObjectKind.Chunk]: 'layerfs/chunk/v1',
  [ObjectKind.Extents]: 'layerfs/extents/v1',
  [ObjectKind.Page]: 'layerfs/page/v1',
  [ObjectKind.Root]: 'layerfs/root/v1',
};

export enum Codec {
  Raw = 0,
}

export function idOf(kind: ObjectKind, data: Uint8Array): Buffer {
  return objectId(DOMAIN_TAGS[kind], data);
}

export interface WriteStats {
  objectsInserted: number;
  objectsReused: number;
  bytesInserted: number;
  bytesReused: number;
}

export function emptyWriteStats(): WriteStats {
  return { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
}

interface Pending {
  id: Buffer;
  kind: ObjectKind;
  offset: number;
  length: number;
}

/**
 * Writes objects inside the caller's transaction; `flush()` must run before it commits.
 * Duplicates (already stored, or already written by this writer) cost one index probe and no
 * payload bytes. Two kinds of pack rows: small objects accumulate into rows of about
 * PACK_TARGET bytes; the chunks of a large file go to rows of their own of about
 * CHUNK_PACK_TARGET bytes (putChunks), so a large file reads back from few rows while a small
 * file's read stays one small row.
 */
export class ObjectWriter {
  private readonly exists;
  private readonly insertPack;
  private readonly insertObject;
  /**
   * The open pack, assembled in a buffer this writer owns and reuses: put() copies the object
   * in, so callers may reuse their buffers at once (the import recycles its read arenas).
   */
  private pack = Buffer.allocUnsafe(PACK_TARGET + 128 * 1024);
  private packBytes = 0;
  private pending: Pending[] = [];
  /**
   * Objects of the open pack by id (latin1): the only ones a probe of the index cannot see yet.
   * Flushed objects are found by the probe, so this never holds more than one pack.
   */
  private readonly open = new Map<string, Pending>();
  readonly stats: WriteStats = emptyWriteStats();

  constructor(
    private readonly db: Db,
    private readonly path: string,
  ) {
    this.exists = db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck();
    this.insertPack = db.prepare('INSERT INTO packs (data) VALUES (?)');
    this.insertObject = db.prepare('INSERT INTO objects (id, kind, size, codec, pack, offset, length) VALUES (?, ?, ?, ?, ?, ?, ?)');
  }

  /** Stores `data` under `id` unless present; returns whether it was new. */
  put(kind: ObjectKind, id: Buffer, data: Uint8Array): boolean {
    const key = id.toString('latin1');
    if (this.open.has(key) || this.stored(id)) {
      this.stats.objectsReused++;
      this.stats.bytesReused += data.length;
      return false;
    }
    if (this.packBytes + data.length > this.pack.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.pack.length, this.packBytes + data.length));
      this.pack.copy(bigger, 0, 0, this.packBytes);
      this.pack = bigger;
    }
    this.pack.set(data, this.packBytes);
    const p: Pending = { id, kind, offset: this.packBytes, length: data.length };
    this.open.set(key, p);
    this.pending.push(p);
    this.packBytes += data.length;
    this.stats.objectsInserted++;
    this.stats.bytesInserted += data.length;
    if (this.packBytes >= PACK_TARGET) this.flush();
    return true;
  }

  /** Hashes and stores; returns the id. */
  add(kind: ObjectKind, data: Uint8Array): Buffer {
    const id = idOf(kind, data);
    this.put(kind, id, data);
    return id;
  }

  /** A copy of an object written by this writer but not flushed yet, if it is one. */
  unflushed(id: Buffer): Buffer | undefined {
    const p = this.open.get(id.toString('latin1'));
    // A copy: the pack buffer is reused once flushed.
    return p && Buffer.from(this.pack.subarray(p.offset, p.offset + p.length));
  }

  /**
   * Stores consecutive chunks of one file: `data` holds them back to back, `lengths` their
   * sizes and `ids` their ids (32 bytes each). New chunks go to rows of their own, split into
   * rows of about CHUNK_PACK_TARGET bytes; a run of new chunks is written straight from `data`.
   * Nothing refers to `data` once this returns.
   */
  putChunks(data: Buffer, lengths: ArrayLike<number>, ids: Buffer): void {
    const fresh: Pending[] = [];
    let freshBytes = 0;
    // Repeats inside this call: not in the index until the rows below are written.
    const here = new Set<string>();
    let offset = 0;
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i]!;
      const id = ids.subarray(i * 32, i * 32 + 32);
      const key = id.toString('latin1');
      if (here.has(key) || this.open.has(key) || this.stored(id)) {
        this.stats.objectsReused++;
        this.stats.bytesReused += length;
      } else {
        here.add(key);
        fresh.push({ id, kind: ObjectKind.Chunk, offset, length });
        freshBytes += length;
      }
      offset += length;
    }
    if (fresh.length === 0) return;
    const rows = Math.max(1, Math.round(freshBytes / CHUNK_PACK_TARGET));
    const rowTarget = freshBytes / rows;
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < fresh.length; i++) {
      bytes += fresh[i]!.length;
      if (bytes >= rowTarget || i === fresh.length - 1) {
        this.writeChunkRow(data, fresh, start, i + 1, bytes);
        start = i + 1;
        bytes = 0;
      }
    }
  }

  private writeChunkRow(data: Buffer, chunks: Pending[], from: number, to: number, bytes: number): void {
    const first = chunks[from]!;
    const last = chunks[to - 1]!;
    const contiguous = last.offset + last.length - first.offset === bytes;
    const row = contiguous ? data.subarray(first.offset, first.offset + bytes) : Buffer.concat(chunks.slice(from, to).map((c) => data.subarray(c.offset, c.offset + c.length)), bytes);
    try {
      const pack = Number(this.insertPack.run(row).lastInsertRowid);
      let at = 0;
      for (let i = from; i < to; i++) {
        const c = chunks[i]!;
        this.insertObject.run(c.id, c.kind, c.length, Codec.Raw, pack, at, c.length);
        at += c.length;
      }
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    this.stats.objectsInserted += to - from;
    this.stats.bytesInserted += bytes;
  }

  private stored(id: Buffer): boolean {
    try {
      return this.exists.get(id) !== undefined;
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
  }

  /** Writes the open pack. Call before committing the transaction. */
  flush(): void {
    if (this.pending.length === 0) return;
    try {
      // SQLite copies the bound bytes, so the buffer is free again after this.
      const pack = Number(this.insertPack.run(this.pack.subarray(0, this.packBytes)).lastInsertRowid);
      for (const p of this.pending) this.insertObject.run(p.id, p.kind, p.length, Codec.Raw, pack, p.offset, p.length);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    this.packBytes = 0;
    this.pending = [];
    this.open.clear();
  }
}

interface Locator {
  kind: number;
  size: number;
  codec: number;
  pack: number;
  offset: number;
  length: number;
}

/** Authenticated reads: every returned byte has been re-hashed against its id. */
export class ObjectReader {
  private readonly locate;
  private readonly readPack;
  /** A few recent packs: sequential reads of a large file touch each pack many times. */
  private readonly packs = new Map<number, Buffer>();

  constructor(
    db: Db,
    private readonly path: string,
  ) {
    this.locate = db.prepare('SELECT kind, size, codec, pack, offset, length FROM objects WHERE id = ?');
    this.readPack = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
  }

  has(id: Uint8Array): boolean {
    return this.locate.get(id) !== undefined;
  }

  locator(id: Uint8Array): Locator | undefined {
    return this.locate.get(id) as Locator | undefined;
  }

  private pack(n: number): Buffer | undefined {
    const hit = this.packs.get(n);
    if (hit) return hit;
    const data = this.readPack.get(n) as Buffer | undefined;
    if (data) {
      this.packs.set(n, data);
      if (this.packs.size > 8) this.packs.delete(this.packs.keys().next().value!);
    }
    return data;
  }

  /** Forget cached packs (after a rollback removed some). */
  reset(): void {
    this.packs.clear();
  }

  get(id: Uint8Array, expected?: ObjectKind): Buffer {
    const hex = () => toHex(id);
    let loc: Locator | undefined;
    let pack: Buffer | undefined;
    try {
      loc = this.locate.get(id) as Locator | undefined;
      if (loc) pack = this.pack(loc.pack);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    if (!loc) throw new LayerFsError('ERR_CORRUPT', `object ${hex()} is missing from the Store`, { id: hex(), path: this.path, hint: 'run layerfs verify' });
    if (expected !== undefined && loc.kind !== expected) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} has kind ${loc.kind}, expected ${expected}`, { id: hex(), path: this.path });
    }
    if (!pack || loc.offset + loc.length > pack.length || loc.codec !== Codec.Raw || loc.length !== loc.size) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} has a damaged locator or pack`, { id: hex(), path: this.path, hint: 'run layerfs verify' });
    }
    const data = pack.subarray(loc.offset, loc.offset + loc.length);
    const tag = DOMAIN_TAGS[loc.kind as ObjectKind];
    if (tag === undefined || !objectId(tag, data).equals(id)) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} does not match its id`, { id: hex(), path: this.path, hint: 'run layerfs verify to list damaged states' });
    }
    return data;
  }
}
