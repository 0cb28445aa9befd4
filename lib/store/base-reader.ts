/**
 * Delta bases read for a writer's delta planner (object-deltas.ts) without garbage: the group
 * frames they are in are decoded into buffers this reader reuses, and a base is lent as a view
 * that stays valid only until the next borrow. The planner copies what it lends into the
 * prefix it compresses against, so no decoded frame outlives its place in the cache. An
 * ObjectReader's frames are new Buffers that its callers may keep, and a large commit decoded
 * hundreds of MB of them only to read its delta bases.
 */
import { objectId } from '../native/hash.js';
import { zstdDecompressInto } from '../native/zstd.js';
import { zstdDictDecompressInto } from '../native/zstd-dict.js';
import { LayerFsError } from '../errors.js';
import { Codec } from './codec.js';
import { CHUNK_FRAME_TARGET } from './schema.js';
import { prepared, type Db } from './store-file.js';
import { loadDictionary } from './dictionary-refs.js';
import { DOMAIN_TAGS, ObjectKind, type Locator } from './object-id.js';
import type { ObjectReader } from './object-reader.js';
import type { Dictionary } from './dictionary.js';

/**
 * Decoded frames kept: the bases of consecutive new chunks overlap, and an old chunk frame holds
 * about four of them, so a frame is read for several deltas in a row, and hardly ever again
 * later (the real tree's release upgrade decoded 4,876 frames with 8 kept, 4,932 with 4, 4,750
 * with 32, 4,674 of them distinct).
 */
const FRAMES = 8;

interface Frame {
  key: string;
  buf: Buffer;
  size: number;
  /** Objects of this frame already re-hashed against their ids, by id (latin1), with their place. */
  checked: Map<string, number>;
}

export class BaseReader {
  private readonly locate;
  private readonly readPart;
  /** Least recently used first. */
  private readonly frames = new Map<string, Frame>();
  /** Frames' buffers to decode into again, once evicted. */
  private spare: Buffer[] = [];
  private readonly dicts = new Map<string, Dictionary | null>();

  constructor(
    private readonly db: Db,
    private readonly reader: () => ObjectReader,
  ) {
    const v2 = (db.pragma('user_version', { simple: true }) as number) >= 2;
    this.locate = prepared(db, `SELECT kind, size, codec, pack, offset, length, ${v2 ? 'at, base' : '0 AS at, NULL AS base'} FROM objects WHERE id = ?`);
    this.readPart = prepared(db, 'SELECT substr(data, ?, ?) FROM packs WHERE id = ?', 'pluck');
  }

  /**
   * The object's bytes, authenticated, as a view valid until the next borrow (copy what is
   * kept). An object stored whole or as a delta, or one whose frame fails in any way, is read
   * by the ObjectReader instead, with its errors.
   */
  borrow(id: Buffer): Buffer {
    // A small commit reads its bases ahead, before the write lock (ObjectReader.remember): those
    // are taken as they are, not decoded again from their frames inside the lock.
    const kept = this.reader().recalled(id);
    if (kept) return kept;
    const loc = this.locate.get(id) as Locator | undefined;
    if (loc && (loc.codec === Codec.Zstd || loc.codec === Codec.Dict)) {
      try {
        const view = this.fromFrame(id, loc);
        if (view) return view;
      } catch (e) {
        if (!(e instanceof LayerFsError)) throw e;
      }
    }
    return this.reader().get(id);
  }

  /** The object's bytes from its (cached) frame, re-hashed the first time; undefined if they do not check. */
  private fromFrame(id: Buffer, loc: Locator): Buffer | undefined {
    const tag = DOMAIN_TAGS[loc.kind as ObjectKind];
    if (tag === undefined) return undefined;
    const frame = this.frameOf(loc);
    if (!frame || loc.at < 0 || loc.at + loc.size > frame.size) return undefined;
    const view = frame.buf.subarray(loc.at, loc.at + loc.size);
    const key = id.toString('latin1');
    if (frame.checked.get(key) === loc.at) return view;
    if (!objectId(tag, view).equals(id)) return undefined;
    frame.checked.set(key, loc.at);
    return view;
  }

  private frameOf(loc: Locator): Frame | undefined {
    const key = `${loc.pack}:${loc.offset}`;
    const hit = this.frames.get(key);
    if (hit) {
      this.frames.delete(key);
      this.frames.set(key, hit);
      return hit;
    }
    let dict: Dictionary | undefined;
    if (loc.codec === Codec.Dict) {
      dict = this.dictionary(loc);
      if (!dict) return undefined;
    }
    const bytes = this.readPart.get(loc.offset + 1, loc.length, loc.pack) as Buffer | null | undefined;
    if (!bytes || bytes.length !== loc.length) return undefined;
    if (this.frames.size >= FRAMES) {
      const old = this.frames.keys().next().value!;
      this.spare.push(this.frames.get(old)!.buf);
      this.frames.delete(old);
    }
    let buf = this.spare.pop() ?? Buffer.alloc(0);
    const decode = (out: Buffer) => (dict ? zstdDictDecompressInto(bytes, out, -1, dict) : zstdDecompressInto(bytes, out, -1));
    let size = decode(buf);
    if (size > buf.length) {
      // A chunk frame's size at least, so a buffer a group frame had still fits the next chunk frame.
      buf = Buffer.allocUnsafeSlow(Math.max(size, CHUNK_FRAME_TARGET + CHUNK_FRAME_TARGET / 4));
      size = decode(buf);
    }
    const frame = { key, buf, size, checked: new Map<string, number>() };
    this.frames.set(key, frame);
    return frame;
  }

  /** The dictionary a Codec.Dict frame needs, read (authenticated) once; undefined when it cannot be read. */
  private dictionary(loc: Locator): Dictionary | undefined {
    return loadDictionary(this.db, loc.base, (id) => this.reader().get(id, ObjectKind.Dictionary), this.dicts) ?? undefined;
  }

  /** Forgets every frame (after a rollback: packs may be written again under the same numbers). */
  reset(): void {
    this.frames.clear();
    this.spare = [];
    this.dicts.clear();
  }
}
