/**
 * Content-addressed object storage. An ObjectId is BLAKE3(domain tag ‖ 0x00 ‖ canonical bytes);
 * the kind column names the domain, so every read re-hashes and authenticates what it returns.
 * Payloads are packed into rows of about PACK_TARGET bytes; the physical form never changes an id.
 */
import { objectId } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { PACK_TARGET } from './schema.js';
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
 * payload bytes.
 */
export class ObjectWriter {
  private readonly exists;
  private readonly insertPack;
  private readonly insertObject;
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private pending: Pending[] = [];
  private readonly seen = new Set<string>();
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
    if (this.seen.has(key) || this.exists.get(id) !== undefined) {
      this.stats.objectsReused++;
      this.stats.bytesReused += data.length;
      return false;
    }
    this.seen.add(key);
    this.pending.push({ id, kind, offset: this.partsBytes, length: data.length });
    this.parts.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    this.partsBytes += data.length;
    this.stats.objectsInserted++;
    this.stats.bytesInserted += data.length;
    if (this.partsBytes >= PACK_TARGET) this.flush();
    return true;
  }

  /** Hashes and stores; returns the id. */
  add(kind: ObjectKind, data: Uint8Array): Buffer {
    const id = idOf(kind, data);
    this.put(kind, id, data);
    return id;
  }

  /** Writes the open pack. Call before committing the transaction. */
  flush(): void {
    if (this.pending.length === 0) return;
    try {
      const pack = Number(this.insertPack.run(this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partsBytes)).lastInsertRowid);
      for (const p of this.pending) this.insertObject.run(p.id, p.kind, p.length, Codec.Raw, pack, p.offset, p.length);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    this.parts = [];
    this.partsBytes = 0;
    this.pending = [];
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
