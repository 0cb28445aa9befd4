/**
 * Stores received frames inside one write transaction (docs/REMOTES.md "Objects"): frames are
 * appended to pack rows as they came and index rows point into them; before the transaction
 * commits every new object has been decoded from the bytes received and re-hashed against its
 * id. A frame seen again in the same transaction (a group frame whose members arrive in several
 * reads) is stored once, its later members pointing into the bytes already written.
 */
import type { Db } from './store-file.js';
import type { Store } from './store.js';
import type { WriteStats } from './objects.js';
import { checkFrame, type Frame, type ObjectForm } from './transfer.js';
import { storedBases } from './dictionary-refs.js';

/** Pack rows written hold about this many stored bytes. */
export const INSERT_ROW_TARGET = 1024 * 1024;

interface Placed {
  data: Buffer;
  members: ObjectForm[];
  /** Where the frame landed once its row is written. */
  pack?: number;
  offset?: number;
}

export interface FrameWriterOptions {
  /** The kind a referring tree object requires, where the caller knows it. */
  expectedKind?: (id: Buffer) => number | undefined;
  /**
   * Objects whose decoded bytes later frames of this transaction need (delta bases); only those
   * are kept in memory. Without it every decoded object is kept.
   */
  keep?: (id: Buffer) => boolean;
  /** Bytes of delta bases not decoded in this transaction: the Store's. */
  baseOf: (id: Buffer) => Buffer;
  /**
   * Whether the Store holds an object already, where the caller knows it without a query (a
   * clone into an empty Store: what this fetch stored); else each member is looked up.
   */
  held?: (id: Buffer) => boolean;
  /** Called with each new object's canonical, re-hashed bytes (a receiver checking what trees refer to). */
  onObject?: (m: ObjectForm, data: Buffer) => void;
}

export class FrameWriter {
  private readonly has;
  private readonly insertPack;
  private readonly insertObject;
  private readonly decoded = new Map<string, Buffer>();
  private readonly placed = new Map<Buffer, Placed>();
  private row: Placed[] = [];
  private rowBytes = 0;
  /** Objects new here, stored by this writer. */
  fresh = 0;
  /** Stored bytes of the frames written. */
  bytes = 0;

  constructor(
    private readonly db: Db,
    private readonly stats: WriteStats,
    private readonly opts: FrameWriterOptions,
  ) {
    this.has = db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck();
    this.insertPack = db.prepare('INSERT INTO packs (data) VALUES (?)');
    this.insertObject = db.prepare('INSERT OR IGNORE INTO objects (id, kind, size, codec, pack, offset, length, at, base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
  }

  /**
   * A delta base or dictionary: decoded here, else read from the Store (the pack row being
   * filled is written first, so a base this writer placed but did not keep is found there).
   */
  private baseOf = (id: Buffer): Buffer => {
    const hit = this.decoded.get(id.toString('latin1'));
    if (hit) return hit;
    if (this.row.length > 0) this.writeRow();
    return this.opts.baseOf(id);
  };

  /** Checks and queues one frame; returns true when a pack row is full and was written. */
  add(f: Frame): boolean {
    const held = this.opts.held ?? ((id: Buffer) => this.has.get(id) !== undefined);
    const members = f.members.filter((m) => !held(m.id));
    if (members.length === 0) return false;
    for (const [m, data] of checkFrame(f.data, members, this.baseOf, this.opts.expectedKind)) {
      if (this.opts.keep?.(m.id) ?? true) this.decoded.set(m.id.toString('latin1'), data);
      this.opts.onObject?.(m, data);
      this.stats.bytesInserted += m.size;
    }
    this.stats.objectsInserted += members.length;
    this.fresh += members.length;
    const seen = this.placed.get(f.data);
    if (seen?.pack !== undefined) {
      const stored = storedBases(this.db);
      for (const m of members) this.insertObject.run(m.id, m.kind, m.size, m.codec, seen.pack, seen.offset, f.data.length, m.at, stored(m.codec, m.base));
      return false;
    }
    if (seen) {
      seen.members.push(...members);
      return false;
    }
    const p: Placed = { data: f.data, members };
    this.placed.set(f.data, p);
    this.row.push(p);
    this.rowBytes += f.data.length;
    if (this.rowBytes < INSERT_ROW_TARGET) return false;
    this.writeRow();
    return true;
  }

  /** Writes the pack row being filled (before the transaction commits). */
  writeRow(): void {
    if (this.row.length === 0) return;
    const data = this.row.length === 1 ? this.row[0]!.data : Buffer.concat(this.row.map((r) => r.data));
    const pack = Number(this.insertPack.run(data).lastInsertRowid);
    let off = 0;
    const stored = storedBases(this.db);
    for (const r of this.row) {
      r.pack = pack;
      r.offset = off;
      // A dictionary travels by id and is named here by this Store's ref (dictionary-refs.ts).
      for (const m of r.members) this.insertObject.run(m.id, m.kind, m.size, m.codec, pack, off, r.data.length, m.at, stored(m.codec, m.base));
      off += r.data.length;
    }
    this.bytes += data.length;
    this.row = [];
    this.rowBytes = 0;
  }
}

/**
 * Stores `frames` in one write transaction, every new object re-hashed before COMMIT (any
 * damage rolls the whole batch back). Returns the objects new here.
 */
export function insertFrames(store: Store, frames: Frame[], expectedKind?: (id: Buffer) => number | undefined): Promise<number> {
  return store.write((w) => {
    const fw = new FrameWriter(store.db, w.stats, { expectedKind, baseOf: (id) => store.objects.get(id) });
    for (const f of frames) fw.add(f);
    fw.writeRow();
    return fw.fresh;
  });
}

export interface FrameStreamOptions extends Omit<FrameWriterOptions, 'baseOf'> {
  /** Called after each read's frames are queued (inside the transaction). */
  onRead?: (frames: Frame[]) => void;
}

/**
 * Stores the frames of successive reads in one write transaction: `next()` gives the next
 * read's frames (undefined: done). The next read is asked for before this one is stored, and
 * the transaction yields to the event loop after each pack row, so the network reads of the
 * next frames proceed while these are decoded, re-hashed and written.
 */
export function insertFrameStream(store: Store, next: () => Promise<Frame[] | undefined> | undefined, opts: FrameStreamOptions = {}): Promise<{ fresh: number; bytes: number }> {
  return store.write(async (w) => {
    const fw = new FrameWriter(store.db, w.stats, { ...opts, baseOf: (id) => store.objects.get(id) });
    let pending = next();
    while (pending) {
      const frames = await pending;
      if (!frames) break;
      pending = next();
      // Awaited in the next round; a failure here must not leave it unobserved.
      pending?.catch(() => {});
      for (const f of frames) if (fw.add(f)) await new Promise((r) => setImmediate(r));
      opts.onRead?.(frames);
    }
    fw.writeRow();
    return { fresh: fw.fresh, bytes: fw.bytes };
  });
}
